# J05: two sandboxes of the same uid. "plant" leaves canaries in /tmp,
# /dev/shm, /workspace, an abstract socket and a SysV segment, says so,
# and waits on stdin; "search" looks for all of them.
import socket
role, name, key = ARGS[0], ARGS[1], int(ARGS[2])
if role == "plant":
    for d in ("/tmp", "/dev/shm", "/workspace"):
        write(d + "/" + name, name)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind("\0" + name)
    s.listen(8)
    r, e = raw(29, key, 4096, 0o1000 | 0o666)  # shmget IPC_CREAT
    OUT["shm created"] = e or "OK"
    print("planted", flush=True)
    sys.stdin.readline()
    s.setblocking(False)
    try:
        s.accept()
        OUT["abstract accepted"] = True
    except BlockingIOError:
        OUT["abstract accepted"] = False
else:
    for d in ("/tmp", "/dev/shm", "/workspace"):
        OUT["ls " + d] = sorted(os.listdir(d))
        attempt("read " + d, lambda d=d: read(d + "/" + name))
    def conn():
        c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        c.connect("\0" + name)
    attempt("abstract connect", conn)
    OUT["abstract listed"] = name in read("/proc/net/unix")
    OUT["shmget"] = sc(29, key, 0, 0)
    OUT["sysvipc shm"] = read("/proc/sysvipc/shm").splitlines()[1:]
done()
