# A04: every visible process, its parent chain, a PTRACE_ATTACH and its fd
# list. Only the payload's own processes may exist.
child = sleeper()
procs = {}
for pid in pids():
    d = "/proc/%d" % pid
    r = {}
    try:
        st = dict(l.split(":\t", 1) for l in read(d + "/status").splitlines() if ":\t" in l)
        r["ppid"] = st["PPid"].strip()
        r["uid"] = st["Uid"].split()
        r["cmdline"] = read(d + "/cmdline").replace("\0", " ")
    except OSError as e:
        r["status"] = ename(e.errno)
    if pid != os.getpid():
        r["ptrace_attach"] = sc(101, 16, pid, 0, 0)  # PTRACE_ATTACH
    try:
        r["fds"] = sorted(os.readlink("%s/fd/%s" % (d, n)) for n in os.listdir(d + "/fd") if int(n) > 2)
    except OSError as e:
        r["fds"] = ename(e.errno)
    procs[str(pid)] = r
OUT["procs"] = procs
OUT["self"] = os.getpid()
child.kill()
child.wait()
done()
