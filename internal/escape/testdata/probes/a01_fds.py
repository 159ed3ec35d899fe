# A01: fds that reached the payload. Every fd >= 3 of every visible
# process, with its target; for each open fd of our own, an openat
# "../../.." through it and a write to it.
import stat
child = sleeper()
fds = {}
for pid in pids():
    try:
        names = os.listdir("/proc/%d/fd" % pid)
    except OSError as e:
        fds[str(pid)] = ename(e.errno)
        continue
    for n in names:
        if int(n) < 3:
            continue
        try:
            fds["%d/%s" % (pid, n)] = os.readlink("/proc/%d/fd/%s" % (pid, n))
        except OSError as e:
            fds["%d/%s" % (pid, n)] = ename(e.errno)
OUT["fds"] = fds
own = {}
for fd in range(3, 1024):
    try:
        st = os.fstat(fd)
    except OSError:
        continue
    kind = "fifo" if stat.S_ISFIFO(st.st_mode) else "socket" if stat.S_ISSOCK(st.st_mode) else "anon" if stat.S_IFMT(st.st_mode) == 0 else oct(stat.S_IFMT(st.st_mode))
    def up(fd=fd):
        os.close(os.open("../../..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd))
    r = {}
    try:
        up()
        r["openat"] = "OK"
    except OSError as e:
        r["openat"] = ename(e.errno)
    own[str(fd)] = {"kind": kind, "openat": r["openat"]}
OUT["own"] = own
child.kill()
child.wait()
done()
