# A03: overwrite the binary of any visible process through /proc/N/exe:
# an O_PATH fd reopened O_WRONLY (the CVE-2019-5736 path), and a direct
# open for writing. Also lists what every visible pid runs.
child = sleeper()
procs = {}
for pid in pids():
    d = "/proc/%d" % pid
    r = {}
    try:
        r["exe"] = os.readlink(d + "/exe")
    except OSError as e:
        r["exe"] = ename(e.errno)
    try:
        r["cmdline"] = read(d + "/cmdline").replace("\0", " ")
    except OSError as e:
        r["cmdline"] = ename(e.errno)
    try:
        fd = os.open(d + "/exe", os.O_PATH)
        for mode, flag in (("reopen_wronly", os.O_WRONLY), ("reopen_rdwr", os.O_RDWR)):
            try:
                os.close(os.open("/proc/self/fd/%d" % fd, flag))
                r[mode] = "OK"
            except OSError as e:
                r[mode] = ename(e.errno)
        os.close(fd)
    except OSError as e:
        r["reopen_wronly"] = "O_PATH " + ename(e.errno)
    try:
        os.close(os.open(d + "/exe", os.O_WRONLY))
        r["open_wronly"] = "OK"
    except OSError as e:
        r["open_wronly"] = ename(e.errno)
    procs[str(pid)] = r
OUT["procs"] = procs
child.kill()
child.wait()
done()
