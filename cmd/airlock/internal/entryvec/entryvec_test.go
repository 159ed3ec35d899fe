//go:build amd64 || arm64

package entryvec

import (
	"runtime"
	"slices"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cstr is s as the kernel lays out a string of the start vector.
func cstr(s string) *byte { return &append([]byte(s), 0)[0] }

// at is the address a as a pointer: memory the test keeps alive, which
// the vector's words (uintptrs, as the kernel's) point into.
func at(a uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&a)) }

// gostr reads the NUL-terminated string at p.
func gostr(p uintptr) string {
	var b []byte
	for ; *(*byte)(at(p)) != 0; p++ {
		b = append(b, *(*byte)(at(p)))
	}
	return string(b)
}

// vector lays out argc, argv, NULL, envp, NULL and auxv (pairs, AT_NULL's
// appended) at the end of a buffer with room below, as the kernel does at
// the top of the stack, and returns the buffer, the vector's index in it,
// and the strings (kept alive by the caller).
func vector(args, env []string, auxv []uintptr, room int) ([]uintptr, int, []*byte) {
	var keep []*byte
	var v []uintptr
	v = append(v, uintptr(len(args)))
	for _, a := range args {
		keep = append(keep, cstr(a))
		v = append(v, uintptr(unsafe.Pointer(keep[len(keep)-1])))
	}
	v = append(v, 0)
	for _, e := range env {
		keep = append(keep, cstr(e))
		v = append(v, uintptr(unsafe.Pointer(keep[len(keep)-1])))
	}
	v = append(v, 0)
	v = append(v, auxv...)
	v = append(v, 0, 0)
	buf := make([]uintptr, room+len(v))
	copy(buf[room:], v)
	return buf, room, keep
}

// read is the vector at sp as argv, env (strings) and auxv (words, the
// AT_NULL pair included).
func read(sp uintptr) (args, env []string, auxv []uintptr) {
	w := func(i int) uintptr { return *(*uintptr)(at(sp + uintptr(i)*8)) }
	argc := int(w(0))
	i := 1
	for ; i <= argc; i++ {
		args = append(args, gostr(w(i)))
	}
	if w(i) != 0 {
		panic("argv not NULL-terminated")
	}
	for i++; w(i) != 0; i++ {
		env = append(env, gostr(w(i)))
	}
	for i++; ; i += 2 {
		auxv = append(auxv, w(i), w(i+1))
		if w(i) == 0 {
			return args, env, auxv
		}
	}
}

func TestVectorAppendsGOMAXPROCS(t *testing.T) {
	auxv := []uintptr{6 /* AT_PAGESZ */, 4096, 25 /* AT_RANDOM */, 0xdeadbeef, 16 /* AT_HWCAP */, 0}
	for _, c := range []struct {
		name      string
		args, env []string
	}{
		{"usual", []string{"airlock", "run", "--", "/bin/true"}, []string{"HOME=/root", "PATH=/usr/bin:/bin", "GOMAXPROC=2", "GOMAXPROCSX=3", "", "G", "gomaxprocs=4"}},
		{"no environment", []string{"airlock"}, nil},
		{"no arguments", nil, []string{"A=1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			buf, top, keep := vector(c.args, c.env, auxv, 256)
			before := slices.Clone(buf[top:])
			sp := uintptr(unsafe.Pointer(&buf[top]))
			got := Vector(sp)
			if got == sp {
				t.Fatal("the vector was left as it is")
			}
			if got%16 != 0 || got > sp-64-uintptr(len(before)+1)*8 || got < uintptr(unsafe.Pointer(&buf[0])) {
				t.Fatalf("the copy is at %#x: not 16-byte aligned, or not below %#x-64 by its size, or outside the room", got, sp)
			}
			args, env, aux := read(got)
			if !slices.Equal(args, c.args) && len(args)+len(c.args) > 0 {
				t.Errorf("argv %q, want %q", args, c.args)
			}
			if want := append(slices.Clone(c.env), "GOMAXPROCS=1"); !slices.Equal(env, want) {
				t.Errorf("envp %q, want %q", env, want)
			}
			if want := append(slices.Clone(auxv), 0, 0); !slices.Equal(aux, want) {
				t.Errorf("auxv %v, want %v", aux, want)
			}
			if !slices.Equal(buf[top:], before) {
				t.Error("the kernel's vector was changed")
			}
			runtime.KeepAlive(keep)
		})
	}
}

func TestVectorLeftAsItIs(t *testing.T) {
	many := make([]string, 9000)
	for i := range many {
		many[i] = "x"
	}
	for _, c := range []struct {
		name      string
		args, env []string
	}{
		{"the caller's GOMAXPROCS", []string{"airlock"}, []string{"A=1", "GOMAXPROCS=4", "B=2"}},
		{"the caller's empty GOMAXPROCS", []string{"airlock"}, []string{"GOMAXPROCS="}},
		{"too many arguments", many, nil},
		{"too long an environment", []string{"airlock"}, many},
	} {
		t.Run(c.name, func(t *testing.T) {
			buf, top, keep := vector(c.args, c.env, []uintptr{6 /* AT_PAGESZ */, 4096}, 20000)
			sp := uintptr(unsafe.Pointer(&buf[top]))
			if got := Vector(sp); got != sp {
				t.Fatalf("Vector(%#x) = %#x, want the vector left as it is", sp, got)
			}
			if slices.ContainsFunc(buf[:top], func(w uintptr) bool { return w != 0 }) {
				t.Error("it wrote below the vector")
			}
			runtime.KeepAlive(keep)
		})
	}
}

// An environment string is read up to its NUL and no further: one that
// ends at the last byte of a page before an unmapped one is read without
// a fault (the kernel puts the strings at the top of the stack).
func TestVectorReadsNoStringPastItsEnd(t *testing.T) {
	page := unix.Getpagesize()
	mem, err := unix.Mmap(-1, 0, 2*page, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(mem)
	if err := unix.Mprotect(mem[page:], unix.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"GOMAXPROCS", "G", ""} {
		off := page - len(s) - 1
		copy(mem[off:], s+"\x00")
		buf, i, keep := vector([]string{"airlock"}, nil, nil, 64)
		// One environment string: the one at the page's end.
		v := []uintptr{1, buf[i+1], 0, uintptr(unsafe.Pointer(&mem[off])), 0, 0, 0}
		room := make([]uintptr, 64+len(v))
		copy(room[64:], v)
		sp := uintptr(unsafe.Pointer(&room[64]))
		got := Vector(sp)
		_, env, _ := read(got)
		if want := []string{s, "GOMAXPROCS=1"}; !slices.Equal(env, want) {
			t.Errorf("%q at a page's end: envp %q, want %q", s, env, want)
		}
		runtime.KeepAlive(keep)
	}
}
