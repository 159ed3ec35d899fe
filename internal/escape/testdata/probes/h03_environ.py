# H03: environ, cmdline and root of every visible process.
child = sleeper()
res = {}
for pid in pids():
    r = {}
    for f in ("environ", "cmdline"):
        try:
            r[f] = read("/proc/%d/%s" % (pid, f)).split("\0")
        except OSError as e:
            r[f] = ename(e.errno)
    attempt("root %d" % pid, lambda pid=pid: os.readlink("/proc/%d/root" % pid))
    res[str(pid)] = r
OUT["procs"] = res
child.kill()
child.wait()
done()
