# K01: the whole environment, of the payload and of a child.
import subprocess
OUT["self"] = sorted(os.environ)
# pid 1 is the reaper (its environment the payload's, and not readable:
# not dumpable) or the payload itself.
try:
    OUT["proc1"] = sorted(v.split("=", 1)[0] for v in read("/proc/1/environ").split("\0") if v)
except OSError as e:
    OUT["proc1"] = ename(e.errno)
OUT["child"] = sorted(subprocess.run(["env"], capture_output=True, text=True).stdout.split("\n"))
OUT["child"] = sorted(l.split("=", 1)[0] for l in OUT["child"] if l)
done()
