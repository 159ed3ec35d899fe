# A11: no mount is shared with the host (no shared: tag), and no mount can
# be made that could propagate out.
tags = {}
for l in read("/proc/self/mountinfo").splitlines():
    f = l.split()
    opt = f[6:f.index("-")]
    tags[f[4]] = opt
OUT["tags"] = tags
os.makedirs("/workspace/m", exist_ok=True)
OUT["mount_tmpfs"] = sc(165, b"tmpfs", b"/workspace/m", b"tmpfs", 0, 0)
OUT["fsopen_tmpfs"] = sc(430, b"tmpfs", 0)
OUT["make_shared"] = sc(165, 0, b"/workspace", 0, 0x100000, 0)  # MS_SHARED
done()
