# I08: 5000 children that exit and are never reaped.
n, err = 0, ""
for _ in range(5000):
    try:
        if os.fork() == 0:
            os._exit(0)
        n += 1
    except OSError as e:
        err = ename(e.errno)
        break
OUT["forked"] = n
OUT["error"] = err
import time
time.sleep(0.2)
OUT["zombies inside"] = sum(1 for p in pids() if read("/proc/%d/stat" % p).rsplit(")", 1)[1].split()[0] == "Z")
done()
