# E02: the writable corners of /proc and sysctls.
attempt("core_pattern", lambda: write("/proc/sys/kernel/core_pattern", "|/tmp/x"))
attempt("sysrq-trigger", lambda: write("/proc/sysrq-trigger", "h"))
attempt("modprobe", lambda: write("/proc/sys/kernel/modprobe", "/tmp/x"))
attempt("drop_caches", lambda: write("/proc/sys/vm/drop_caches", "3"))
attempt("ip_forward", lambda: write("/proc/sys/net/ipv4/ip_forward", "1"))
attempt("oom_score_adj", lambda: write("/proc/self/oom_score_adj", "-1000"))
done()
