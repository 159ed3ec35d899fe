# B07: set the wall clock (clock_settime, settimeofday) and steer it
# (adjtimex and clock_adjtime with modes).
ts = (ctypes.c_long * 2)(1893456000, 0)  # 2030-01-01
OUT["clock_settime"] = sc(227, 0, ctypes.byref(ts))
OUT["settimeofday"] = sc(164, ctypes.byref(ts), 0)
tx = (ctypes.c_char * 256)()
ctypes.c_uint.from_buffer(tx, 0).value = 0x0001 | 0x2000  # ADJ_OFFSET | ADJ_NANO
ctypes.c_long.from_buffer(tx, 8).value = 400000000  # offset
OUT["adjtimex modes"] = sc(159, ctypes.byref(tx))
OUT["clock_adjtime modes"] = sc(305, 0, ctypes.byref(tx))
ctypes.c_uint.from_buffer(tx, 0).value = 0x0100  # ADJ_SETOFFSET: step the clock
OUT["clock_adjtime setoffset"] = sc(305, 0, ctypes.byref(tx))
done()
