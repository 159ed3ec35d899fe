# C13: open_by_handle_at ("shocker"): a handle for the root of the
# filesystem that holds /usr, and a forged one for inode 2.
buf = (ctypes.c_char * 136)()
ctypes.c_uint32.from_buffer(buf, 0).value = 128  # handle_bytes
mnt = ctypes.c_int()
OUT["name_to_handle_at"] = sc(303, -100, b"/usr", ctypes.byref(buf), ctypes.byref(mnt), 0)
fd = os.open("/usr", os.O_RDONLY | os.O_DIRECTORY)
OUT["open_by_handle_at"] = sc(304, fd, ctypes.byref(buf), 0)
forged = (ctypes.c_char * 16)()
ctypes.c_uint32.from_buffer(forged, 0).value = 8
ctypes.c_int32.from_buffer(forged, 4).value = 1  # FILEID_INO32_GEN
ctypes.c_uint32.from_buffer(forged, 8).value = 2  # inode 2, the root
OUT["open_by_handle_at forged"] = sc(304, fd, ctypes.byref(forged), 0)
done()
