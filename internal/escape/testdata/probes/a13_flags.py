# A13: the writable mounts are nosuid and nodev; mknod of a device in them
# is refused, and a device node there could not be opened.
flags = {}
for l in read("/proc/self/mountinfo").splitlines():
    f = l.split()
    if f[4] in ("/tmp", "/workspace", "/dev/shm", "/dev"):
        flags[f[4]] = f[5].split(",")
OUT["flags"] = flags
for d in ("/workspace", "/tmp", "/dev/shm"):
    attempt("mknod " + d, lambda d=d: os.mknod(d + "/null", 0o020666, os.makedev(1, 3)))
    if OUT["mknod " + d] == "OK":
        attempt("open node " + d, lambda d=d: os.close(os.open(d + "/null", os.O_RDONLY)))
done()
