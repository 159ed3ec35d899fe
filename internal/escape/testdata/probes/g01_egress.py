# G01: egress over TCP, UDP, ICMP and IPv6 to public and link-local
# addresses, and the host's loopback listener; the interfaces there are.
import socket
OUT["ifaces"] = sorted(l.split(":")[0].strip() for l in read("/proc/net/dev").splitlines()[2:])
OUT["routes v4"] = read("/proc/net/route").splitlines()[1:]
attempt("routes v6", lambda: [l for l in read("/proc/net/ipv6_route").splitlines() if not l.split()[-1] == "lo"])
def tcp(addr, fam=socket.AF_INET):
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(addr)
def udp(addr, fam=socket.AF_INET):
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.sendto(b"\0" * 12, addr)
attempt("tcp 1.1.1.1:443", lambda: tcp(("1.1.1.1", 443)))
attempt("tcp 169.254.169.254:80", lambda: tcp(("169.254.169.254", 80)))
attempt("udp 8.8.8.8:53", lambda: udp(("8.8.8.8", 53)))
attempt("tcp6 [2606:4700:4700::1111]:443", lambda: tcp(("2606:4700:4700::1111", 443), socket.AF_INET6))
attempt("udp6 [2001:4860:4860::8888]:53", lambda: udp(("2001:4860:4860::8888", 53), socket.AF_INET6))
attempt("icmp socket", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP).close())
attempt("host loopback listener", lambda: tcp(("127.0.0.1", int(os.environ["ESCAPE_PORT"]))))
done()
