# H02: reach host processes (pids on the command line) by pidfd, kill,
# ptrace, process_vm_readv and F_SETOWN.
import fcntl, socket
visible = pids()
res = {}
for pid in (int(a) for a in ARGS):
    r = {"visible inside": pid in visible}
    r["pidfd_open"] = sc(434, pid, 0)
    r["kill 0"] = sc(62, pid, 0)
    r["kill TERM"] = sc(62, pid, 15)
    r["ptrace attach"] = sc(101, 16, pid, 0, 0)
    buf = ctypes.create_string_buffer(8)
    iov = (ctypes.c_uint64 * 2)(ctypes.addressof(buf), 8)
    r["process_vm_readv"] = sc(310, pid, ctypes.byref(iov), 1, ctypes.byref(iov), 1, 0)
    s = socket.socket()
    try:
        fcntl.fcntl(s.fileno(), fcntl.F_SETOWN, pid)
        r["F_SETOWN"] = "OK"
    except OSError as e:
        r["F_SETOWN"] = ename(e.errno)
    s.close()
    res[str(pid)] = r
OUT["targets"] = res
done()
