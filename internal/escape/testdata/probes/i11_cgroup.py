# I11: move into another cgroup: every cgroup.procs and tasks file a
# host would have, and any found on the filesystem.
before = read("/proc/self/cgroup")
for c in ("", "memory/", "pids/", "cpu,cpuacct/", "freezer/", "unified/", "systemd/"):
    for f in ("cgroup.procs", "tasks"):
        attempt("/sys/fs/cgroup/" + c + f, lambda p="/sys/fs/cgroup/" + c + f: write(p, str(os.getpid())))
found = []
for root, dirs, files in os.walk("/"):
    if root == "/":
        dirs[:] = [d for d in dirs if d not in ("proc", "usr")]
    found += [os.path.join(root, f) for f in files if f in ("cgroup.procs", "tasks", "release_agent")]
OUT["found"] = found
OUT["cgroup unchanged"] = read("/proc/self/cgroup") == before
done()
