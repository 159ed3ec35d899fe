# D04/D05: the device nodes there are, and mknod of dangerous ones
# (/dev/mem, a disk) anywhere writable.
devs = {}
for n in sorted(os.listdir("/dev")):
    st = os.lstat("/dev/" + n)
    import stat
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        devs[n] = "%s %d:%d" % ("c" if stat.S_ISCHR(st.st_mode) else "b", os.major(st.st_rdev), os.minor(st.st_rdev))
    elif stat.S_ISLNK(st.st_mode):
        devs[n] = "-> " + os.readlink("/dev/" + n)
    else:
        devs[n] = "dir" if stat.S_ISDIR(st.st_mode) else oct(st.st_mode)
OUT["dev"] = devs
attempt("D04 mknod mem", lambda: os.mknod("/tmp/mem", 0o020600, os.makedev(1, 1)))
for d in ("/dev", "/workspace", "/dev/shm"):
    attempt("mknod mem " + d, lambda d=d: os.mknod(d + "/mem", 0o020600, os.makedev(1, 1)))
    attempt("mknod sda " + d, lambda d=d: os.mknod(d + "/sda", 0o060600, os.makedev(8, 0)))
for p in ("/dev/mem", "/dev/kmem", "/dev/port", "/dev/sda", "/dev/vda", "/dev/tty", "/dev/console", "/dev/kmsg"):
    attempt("open " + p, lambda p=p: os.close(os.open(p, os.O_RDONLY)))
done()
