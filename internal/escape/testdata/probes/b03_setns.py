# B03: setns into the namespaces of pid 1 through /proc/1/ns, and every
# namespace inode visible inside (the host compares them with its own).
for ns in ("mnt", "net", "pid", "user", "ipc", "uts", "cgroup"):
    try:
        fd = os.open("/proc/1/ns/" + ns, os.O_RDONLY)
        OUT["setns " + ns] = sc(308, fd, 0)
        os.close(fd)
    except OSError as e:
        OUT["setns " + ns] = "open " + ename(e.errno)
seen = {}
for pid in pids():
    try:
        for ns in os.listdir("/proc/%d/ns" % pid):
            seen.setdefault(ns, set()).add(os.readlink("/proc/%d/ns/%s" % (pid, ns)))
    except OSError:
        pass
OUT["ns"] = {k: sorted(v) for k, v in seen.items()}
done()
