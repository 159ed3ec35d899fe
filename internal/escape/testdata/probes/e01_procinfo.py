# E01: sensitive /proc files and the kernel log.
# Masked (an empty read-only file) where the kernel has one.
attempt("kcore", lambda: "READ" if read("/proc/kcore", 16) else "EMPTY")
attempt("kmsg", lambda: read("/proc/kmsg", 1) and "READ")
for f in ("sched_debug", "timer_list", "keys", "latency_stats", "kallsyms", "modules", "iomem", "ioports"):
    attempt(f, lambda f=f: read("/proc/" + f))
ks = OUT.get("kallsyms", "")
if isinstance(ks, str) and ks not in ("EACCES", "ENOENT", "EPERM"):
    lines = ks.splitlines()
    OUT["kallsyms"] = {"lines": len(lines), "nonzero": sum(1 for l in lines if l.split()[0].strip("0"))}
for f in ("sched_debug", "timer_list", "keys", "latency_stats", "modules", "iomem", "ioports"):
    v = OUT[f]
    if len(v) > 20:  # the content, for the host to search; shortened
        OUT[f] = {"bytes": len(v), "supervisor_comm": "escape.test" in v, "head": v[:200]}
buf = ctypes.create_string_buffer(4096)
OUT["syslog read_all"] = sc(103, 3, buf, 4096)
OUT["syslog size_buffer"] = sc(103, 10, 0, 0)
attempt("/dev/kmsg", lambda: read("/dev/kmsg", 1))
attempt("/sys/firmware", lambda: os.listdir("/sys/firmware"))
done()
