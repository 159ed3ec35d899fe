# Common prelude of every probe: raw syscalls (errno straight from the
# kernel, never rewritten by glibc), an attempt helper, and the output.
# The first line printed is the pid namespace, so that the host can find
# leftovers even when the probe is killed; the last is the observation.
import ctypes, errno, json, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print(json.dumps({"pidns": os.readlink("/proc/self/ns/pid")}), flush=True)
MARKER = sys.argv[1]
ARGS = sys.argv[2:]
OUT = {}

def ename(e):
    return errno.errorcode.get(e, str(e))

def raw(nr, *args):
    """A raw syscall: (return value, errno name or "")."""
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    return r, (ename(ctypes.get_errno()) if r == -1 else "")

def sc(nr, *args):
    """A raw syscall: "OK" or the errno name."""
    r, e = raw(nr, *args)
    return e or "OK"

def attempt(name, f):
    """Runs f: its result (or "OK"), or the errno name of its OSError."""
    try:
        v = f()
        OUT[name] = "OK" if v is None else v
    except OSError as e:
        OUT[name] = ename(e.errno) if e.errno else str(e)

def read(path, n=-1):
    with open(path, "rb") as f:
        return f.read(n).decode("utf-8", "replace")

def write(path, data, mode="w"):
    with open(path, mode) as f:
        f.write(data)

def pids():
    return sorted(int(p) for p in os.listdir("/proc") if p.isdigit())

def sleeper(seconds=30):
    """A child process carrying the marker, for probes that need a second
    pid; returned once it runs Python (its loader has closed the libraries
    it opened)."""
    import subprocess
    p = subprocess.Popen([sys.executable, "-I", "-c", "import time; print('up', flush=True); time.sleep(%d)" % seconds, MARKER],
                         stdout=subprocess.PIPE)
    p.stdout.readline()
    return p

def done():
    print(json.dumps(OUT), flush=True)
