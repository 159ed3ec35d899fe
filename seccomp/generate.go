package seccomp

//go:generate go run ./internal/mksysnum
