# F06: create a file in every directory; only /tmp, /workspace and
# /dev/shm may take it. The host canary is bound read-only at /canary:
# every way of changing it is tried.
for d in ("/", "/usr", "/usr/bin", "/usr/lib", "/etc", "/bin", "/sbin", "/lib", "/lib64", "/var", "/root", "/home",
          "/proc", "/proc/sys", "/dev", "/canary", "/tmp", "/workspace", "/dev/shm"):
    def touch(d=d):
        p = d.rstrip("/") + "/.airlock-escape"
        os.close(os.open(p, os.O_WRONLY | os.O_CREAT, 0o644))
        os.unlink(p)
    attempt("touch " + d, touch)
c = "/canary/canary"
attempt("open wronly", lambda: os.close(os.open(c, os.O_WRONLY)))
attempt("open trunc", lambda: os.close(os.open(c, os.O_RDONLY | os.O_TRUNC)))
attempt("truncate", lambda: os.truncate(c, 0))
attempt("unlink", lambda: os.unlink(c))
attempt("rename", lambda: os.rename(c, "/canary/x"))
attempt("chmod", lambda: os.chmod(c, 0o777))
attempt("utime", lambda: os.utime(c, (0, 0)))
attempt("link", lambda: os.link(c, "/tmp/canary-link"))
attempt("setxattr", lambda: os.setxattr(c, "user.x", b"1"))
done()
