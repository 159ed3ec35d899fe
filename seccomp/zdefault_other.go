//go:build !amd64 && !arm64

package seccomp

// precompiled is empty where no syscall table is: Compile refuses.
var precompiled []precompiledFilter
