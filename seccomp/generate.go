package seccomp

//go:generate go run ./internal/mksysnum
//go:generate go run ./internal/mkdefault
//go:generate go run ./internal/mkdefault -arch arm64
