# G03: the host's abstract unix socket, and what /proc/net/unix lists.
import socket
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect("\0" + os.environ["ESCAPE_ABSTRACT"])
attempt("host abstract socket", conn)
OUT["abstract listed"] = [l.split()[-1] for l in read("/proc/net/unix").splitlines()[1:] if l.split()[-1].startswith("@")]
done()
