# G05: the raw and administrative network surface: AF_PACKET, netfilter
# netlink, raw IP sockets, and creating a link over rtnetlink.
import socket, struct
OUT["AF_PACKET raw"] = sc(41, 17, 3, 0x0300)
OUT["AF_PACKET dgram"] = sc(41, 17, 2, 0x0300)
OUT["NETLINK_NETFILTER"] = sc(41, 16, 3, 12)
OUT["AF_INET raw"] = sc(41, 2, 3, 255)
OUT["AF_INET6 raw"] = sc(41, 10, 3, 58)
def linkadd():
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    kind = b"dummy\0"
    info = struct.pack("HH", 4 + len(kind), 1) + kind + b"\0" * ((4 - len(kind) % 4) % 4)  # IFLA_INFO_KIND
    linkinfo = struct.pack("HH", 4 + len(info), 18) + info  # IFLA_LINKINFO
    name = b"airlock0\0"
    ifname = struct.pack("HH", 4 + len(name), 3) + name + b"\0" * ((4 - len(name) % 4) % 4)  # IFLA_IFNAME
    body = struct.pack("BxHiII", 0, 0, 0, 0, 0) + ifname + linkinfo
    msg = struct.pack("IHHII", 16 + len(body), 16, 0x1 | 0x4 | 0x400 | 0x200, 1, 0) + body  # RTM_NEWLINK, REQUEST|ACK|CREATE|EXCL
    s.send(msg)
    resp = s.recv(4096)
    err = struct.unpack("i", resp[16:20])[0]
    return "OK" if err == 0 else ename(-err)
attempt("rtnetlink link add", linkadd)
def setlo(flags):
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    body = struct.pack("BxHiII", 0, 0, socket.if_nametoindex("lo"), flags, 1)
    s.send(struct.pack("IHHII", 16 + len(body), 16, 0x1 | 0x4, 1, 0) + body)
    err = struct.unpack("i", s.recv(4096)[16:20])[0]
    return "OK" if err == 0 else ename(-err)
attempt("rtnetlink lo down", lambda: setlo(0))
done()
