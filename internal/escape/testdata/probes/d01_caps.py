# D01: the five capability sets of every task (threads and a child
# included), capget, the bounding and ambient sets by prctl, securebits
# and no_new_privs.
import threading
ev = threading.Event()
th = threading.Thread(target=ev.wait)
th.start()
child = sleeper()
status = {}
for pid in pids():
    for tid in os.listdir("/proc/%d/task" % pid):
        st = read("/proc/%d/task/%s/status" % (pid, tid))
        status["%d/%s" % (pid, tid)] = {l.split(":")[0]: l.split(":\t")[1].strip() for l in st.splitlines()
                                        if l.startswith(("Cap", "NoNewPrivs", "Seccomp:"))}
OUT["status"] = status
hdr = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
data = (ctypes.c_uint32 * 6)()
OUT["capget"] = sc(125, ctypes.byref(hdr), ctypes.byref(data))
OUT["capget data"] = list(data)
bset, amb = [], []
for cap in range(0, 64):
    r, e = raw(157, 23, cap, 0, 0, 0)  # PR_CAPBSET_READ
    if r > 0:
        bset.append(cap)
    r, e = raw(157, 47, 1, cap, 0, 0)  # PR_CAP_AMBIENT_IS_SET
    if r > 0:
        amb.append(cap)
OUT["bounding"] = bset
OUT["ambient"] = amb
OUT["securebits"], _ = raw(157, 27, 0, 0, 0, 0)
OUT["no_new_privs"], _ = raw(157, 39, 0, 0, 0, 0)
OUT["raise ambient"] = sc(157, 47, 2, 21, 0, 0)  # PR_CAP_AMBIENT_RAISE CAP_SYS_ADMIN
ev.set()
th.join()
child.kill()
child.wait()
done()
