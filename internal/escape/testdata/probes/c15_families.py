# C15: every socket family with every common type; netlink with every
# protocol. Only AF_UNIX, AF_INET, AF_INET6 and NETLINK_ROUTE may open.
opened = {}
for af in range(0, 46):
    for typ in (1, 2, 3, 5):  # STREAM, DGRAM, RAW, SEQPACKET
        r, e = raw(41, af, typ | 0o2000000, 0)
        if r >= 0:
            os.close(r)
            opened.setdefault(str(af), []).append(typ)
for proto in range(0, 32):
    r, e = raw(41, 16, 3 | 0o2000000, proto)
    if r >= 0:
        os.close(r)
        opened.setdefault("netlink proto", []).append(proto)
OUT["opened"] = opened
OUT["AF_PACKET"] = sc(41, 17, 3, 0x0300)
OUT["AF_VSOCK"] = sc(41, 40, 1, 0)
OUT["AF_ALG"] = sc(41, 38, 5, 0)
done()
