# B04: only the payload's processes are visible; pid 1 is the payload and
# has no parent; the host supervisor's pid does not exist here.
child = sleeper()
OUT["pids"] = {str(p): read("/proc/%d/cmdline" % p).replace("\0", " ") for p in pids()}
OUT["getpid"] = os.getpid()
OUT["getppid"] = os.getppid()
OUT["nspid"] = [l for l in read("/proc/self/status").splitlines() if l.startswith("NSpid")]
OUT["kill host supervisor"] = sc(62, int(os.environ["ESCAPE_HOSTPID"]), 0)
child.kill()
child.wait()
done()
