# M02: the kernel and the sysctls that decide many expectations, as the
# sandbox sees them.
names = ["kernel/unprivileged_userns_clone", "user/max_user_namespaces", "kernel/unprivileged_bpf_disabled",
         "kernel/perf_event_paranoid", "vm/unprivileged_userfaultfd", "kernel/io_uring_disabled",
         "dev/tty/legacy_tiocsti", "kernel/yama/ptrace_scope", "kernel/kptr_restrict", "kernel/dmesg_restrict",
         "fs/protected_symlinks", "fs/protected_hardlinks", "fs/protected_fifos", "fs/protected_regular"]
for n in names:
    attempt(n.replace("/", "."), lambda n=n: read("/proc/sys/" + n).strip())
OUT["release"] = os.uname().release
done()
