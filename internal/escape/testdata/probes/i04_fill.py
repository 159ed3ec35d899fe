# I04: fill a tmpfs (ARGS[0]) until the kernel says no; report the size
# option of its mount and how far the writes got. Progress lines go out
# as it writes, so a kill by the memory limit still shows the count.
target = ARGS[0]
opts = ""
for l in read("/proc/self/mountinfo").splitlines():
    f = l.split()
    if f[4] == target:
        opts = f[-1]
OUT["super options"] = opts
chunk = b"\xa5" * (1 << 20)
n = 0
path = target + "/fill"
with open(path, "wb", buffering=0) as f:
    try:
        while True:
            n += f.write(chunk)
            if n % (8 << 20) == 0:
                print(json.dumps({"written": n}), flush=True)
    except OSError as e:
        OUT["error"] = ename(e.errno)
OUT["written"] = n
os.unlink(path)
done()
