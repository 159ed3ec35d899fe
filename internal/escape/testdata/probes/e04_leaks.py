# E04/A02: what the sandbox can learn about the host from its own files.
OUT["cwd"] = os.getcwd()
OUT["cgroup"] = sorted(set(l.split(":")[-1].strip() for l in read("/proc/self/cgroup").splitlines()))
for f in ("/proc/self/mountinfo", "/proc/self/cgroup", "/proc/self/environ", "/proc/1/cmdline", "/etc/hostname",
          "/etc/hosts", "/etc/passwd", "/etc/group", "/etc/machine-id", "/etc/resolv.conf", "/proc/self/mounts"):
    attempt(f, lambda f=f: read(f))
attempt("dmi", lambda: os.listdir("/sys/class/dmi/id"))
OUT["nodename"] = os.uname().nodename
attempt("ls ../../..", lambda: sorted(os.listdir("../../..")))
done()
