# C12: bpf, perf_event_open and userfaultfd, with real arguments.
attr = (ctypes.c_uint32 * 18)(2, 4, 4, 1)  # BPF_MAP_TYPE_ARRAY, key 4, value 4, 1 entry
OUT["bpf map_create"] = sc(321, 0, ctypes.byref(attr), 72)
insns = (ctypes.c_uint64 * 2)(0x00000000000000b7, 0x0000000000000095)  # r0 = 0; exit
prog = (ctypes.c_uint64 * 16)()
ctypes.c_uint32.from_buffer(prog, 0).value = 1  # BPF_PROG_TYPE_SOCKET_FILTER
ctypes.c_uint32.from_buffer(prog, 4).value = 2
ctypes.c_uint64.from_buffer(prog, 8).value = ctypes.addressof(insns)
lic = ctypes.create_string_buffer(b"GPL")
ctypes.c_uint64.from_buffer(prog, 16).value = ctypes.addressof(lic)
OUT["bpf prog_load"] = sc(321, 5, ctypes.byref(prog), 128)
pe = (ctypes.c_char * 128)()
ctypes.c_uint32.from_buffer(pe, 0).value = 1  # PERF_TYPE_SOFTWARE, config 0 = CPU_CLOCK
ctypes.c_uint32.from_buffer(pe, 4).value = 128
OUT["perf_event_open"] = sc(298, ctypes.byref(pe), 0, -1, -1, 0)
OUT["userfaultfd"] = sc(323, 0o2000000 | 0o4000)
OUT["userfaultfd user-mode-only"] = sc(323, 1)
attempt("open /dev/userfaultfd", lambda: os.close(os.open("/dev/userfaultfd", os.O_RDWR)))
done()
