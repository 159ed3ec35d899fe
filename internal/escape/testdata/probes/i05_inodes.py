# I05: create directories in a tmpfs (ARGS[0]) until its inodes run out.
target = ARGS[0] + "/inodes"
os.mkdir(target)
n = 0
try:
    while n < 10**7:
        os.mkdir("%s/%d" % (target, n))
        n += 1
except OSError as e:
    OUT["error"] = ename(e.errno)
OUT["created"] = n
for l in read("/proc/self/mountinfo").splitlines():
    f = l.split()
    if f[4] == ARGS[0]:
        OUT["super options"] = f[-1]
done()
