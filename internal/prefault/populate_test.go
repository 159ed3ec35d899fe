//go:build linux && (amd64 || arm64)

package prefault

import (
	"bufio"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// initialized sits in the data segment (an initialized pointer), the
// writable part Populate maps.
var initialized = &struct{ a, b int }{1, 2}

// Populate maps this binary's text, read-only data and data segment:
// afterwards every page of the mappings holding a function, a read-only
// table and an initialized variable is present. Without it the runtime
// has touched only some of them (and the kernel's fault-around maps a
// few more). A kernel before 5.14 refuses both calls with EINVAL.
func TestPopulate(t *testing.T) {
	ro, rw := Populate()
	if !kernelAtLeast(t, 5, 14) {
		if ro != -int64(unix.EINVAL) || rw != -int64(unix.EINVAL) {
			t.Fatalf("Populate() = %d, %d before Linux 5.14, want -EINVAL twice", ro, rw)
		}
		return
	}
	if ro != 0 || rw != 0 {
		t.Fatalf("Populate() = %d, %d, want 0, 0", ro, rw)
	}
	page := uintptr(os.Getpagesize())
	for name, addr := range map[string]uintptr{
		"text (a function)":     reflect.ValueOf(TestPopulate).Pointer(),
		"read-only data":        uintptr(unsafe.Pointer(unsafe.StringData("a string constant of the read-only data"))),
		"data (an initialized)": uintptr(unsafe.Pointer(&initialized)),
	} {
		size, rss, ok := residency(t, addr)
		if !ok {
			t.Errorf("%s: no mapping holds %#x", name, addr)
			continue
		}
		// The text's mapping starts with the ELF headers' page, which
		// Populate leaves (it starts at the text's own page).
		if rss+page < size {
			t.Errorf("%s at %#x: %d of its mapping's %d bytes resident, want all (but a page)", name, addr, rss, size)
		}
	}
}

// residency returns the size and resident bytes of the mapping holding
// addr, from /proc/self/smaps.
func residency(t *testing.T, addr uintptr) (size, rss uintptr, ok bool) {
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 && strings.Contains(line, "-") && !strings.HasSuffix(strings.Fields(line)[0], ":") {
			if in {
				return size, rss, true
			}
			in = lo <= addr && addr < hi
			continue
		}
		if !in {
			continue
		}
		var kb uintptr
		if n, _ := fmt.Sscanf(line, "Size: %d kB", &kb); n == 1 {
			size = kb << 10
		} else if n, _ := fmt.Sscanf(line, "Rss: %d kB", &kb); n == 1 {
			rss = kb << 10
		}
	}
	return size, rss, in
}

func kernelAtLeast(t *testing.T, major, minor int) bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		t.Fatal(err)
	}
	var a, b int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &a, &b); err != nil {
		t.Fatal(err)
	}
	return a > major || a == major && b >= minor
}

// The test binary's heap window, populated as initheap and the CLI's
// early populate theirs: at its initialization, among the first.
func init() { PopulateHeap(InitHeapWindow) }

// PopulateHeap populated the heap window asked for: every page of
// what it populated is resident (mincore), where a process that had not
// would have touched only those its allocations reached. It populated
// the whole window, or stopped at a chunk past the heap's mapped part at
// the time (EINVAL: the arena's reserved rest, which the heap may have
// grown into since; run41, rootless, at 0x86a39b00000), never before its
// first chunk, which holds the first object.
func TestHeapWindow(t *testing.T) {
	if !kernelAtLeast(t, 5, 14) {
		if Heap.Result != -int64(unix.EINVAL) || Heap.Populated != 0 {
			t.Fatalf("heap window: %d after %d bytes before Linux 5.14, want -EINVAL at once", Heap.Result, Heap.Populated)
		}
		return
	}
	switch {
	case Heap.Window != InitHeapWindow:
		t.Fatalf("heap window of %d bytes, want the %d asked for", Heap.Window, InitHeapWindow)
	case Heap.Start == 0 || Heap.Populated == 0:
		t.Fatalf("heap window at %#x: %d bytes populated (%d), want its first chunk at least", Heap.Start, Heap.Populated, Heap.Result)
	case Heap.Populated < Heap.Window && Heap.Result != -int64(unix.EINVAL) && Heap.Result != -int64(unix.ENOMEM):
		t.Fatalf("heap window at %#x: stopped after %d bytes with %d, want EINVAL or ENOMEM (the mapped part's end)", Heap.Start, Heap.Populated, Heap.Result)
	case Heap.Populated == Heap.Window && Heap.Result != 0:
		t.Fatalf("heap window at %#x: %d, want 0", Heap.Start, Heap.Result)
	}
	t.Logf("heap window at %#x: %d of %d bytes populated (%d)", Heap.Start, Heap.Populated, Heap.Window, Heap.Result)
	vec := make([]byte, Heap.Populated/uintptr(os.Getpagesize()))
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, Heap.Start, Heap.Populated, uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	absent := 0
	for _, v := range vec {
		if v&1 == 0 {
			absent++
		}
	}
	if absent != 0 {
		t.Errorf("heap window at %#x: %d of the %d pages populated absent", Heap.Start, absent, len(vec))
	}
}
