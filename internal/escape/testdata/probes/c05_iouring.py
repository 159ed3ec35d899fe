# C05: io_uring, whose operations seccomp never sees.
params = (ctypes.c_char * 120)()
OUT["io_uring_setup"] = sc(425, 8, ctypes.byref(params))
OUT["io_uring_enter"] = sc(426, -1, 0, 0, 0, 0, 0)
OUT["io_uring_register"] = sc(427, -1, 0, 0, 0)
attempt("io_uring_disabled", lambda: read("/proc/sys/kernel/io_uring_disabled").strip())
done()
