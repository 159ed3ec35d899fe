# A12: every read-only mount (the system binds, their submounts, and a
# host dir with submounts bound read-only at /mnt/hostdev) refuses writes
# and cannot be remounted read-write.
ro = {}
for l in read("/proc/self/mountinfo").splitlines():
    f = l.split()
    target, opts = f[4], f[5].split(",")
    if target in ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc/ld.so.cache", "/etc/alternatives") or target.startswith(("/usr/", "/mnt/hostdev")):
        r = {"ro": "ro" in opts, "dir": os.path.isdir(target)}
        if r["dir"]:
            p = target + "/.airlock-escape"
            try:
                os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644))
                r["create"] = "OK"
            except OSError as e:
                r["create"] = ename(e.errno)
        else:
            try:
                os.close(os.open(target, os.O_WRONLY))
                r["create"] = "OK"
            except OSError as e:
                r["create"] = ename(e.errno)
        r["remount_rw"] = sc(165, 0, target.encode(), 0, 0x20 | 0x1000, 0)  # MS_REMOUNT|MS_BIND
        attr = (ctypes.c_uint64 * 4)(0, 1, 0, 0)  # attr_set 0, attr_clr MOUNT_ATTR_RDONLY
        r["mount_setattr_rw"] = sc(442, -100, target.encode(), 0x8000, ctypes.byref(attr), 32)
        ro[target] = r
OUT["ro"] = ro
done()
