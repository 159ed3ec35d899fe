# A10: the old root and the host mounts are gone; a nested user+mount
# namespace, a fresh procfs and the new mount API are all denied.
OUT["mountinfo"] = read("/proc/self/mountinfo").splitlines()
OUT["root"] = sorted(os.listdir("/"))
attempt("proc1_root", lambda: sorted(os.listdir("/proc/1/root")))
OUT["unshare_user_mnt"] = sc(272, 0x10000000 | 0x00020000)
os.makedirs("/tmp/p", exist_ok=True)
OUT["mount_proc"] = sc(165, b"proc", b"/tmp/p", b"proc", 0, 0)
OUT["fsopen_proc"] = sc(430, b"proc", 0)
attempt("sysrq_after", lambda: os.write(os.open("/tmp/p/sysrq-trigger", os.O_WRONLY), b"h"))
done()
