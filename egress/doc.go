// Package egress is a sandbox's only way out under net allow: an HTTP
// and SOCKS5 proxy the supervisor serves, from the host's side, on a
// listener the sandbox's init made on its own loopback
// (127.0.0.1:Port in the sandbox's network namespace, which has no
// other interface and no route).
//
// # What it enforces
//
//   - Only connections an allow rule names, and none a deny rule names
//     (deny wins). Rules are host names, *.suffix wildcards, IPs and
//     CIDRs, with a port or port range (policy.ParseNetRule).
//   - Names are resolved here, never in the sandbox, and only names an
//     allow rule matches (a denied name is never looked up). Every
//     resolved address is checked again: loopback, private, link-local
//     (cloud metadata), CGNAT, multicast and the other special ranges
//     (Special), IPv4 and IPv6, are refused unless an allow rule names
//     the address, or a prefix no wider than its range, literally. So a
//     name that resolves to 127.0.0.1 (DNS rebinding, localtest.me)
//     reaches nothing. The checked address is what is dialled.
//   - Limits: concurrent connections, total bytes both ways, an idle
//     timeout per connection (policy.Egress).
//   - A log entry per connection asked for: host, port, address,
//     verdict, bytes up and down, duration (Conn).
//
// # What it does not do
//
// It does not look inside TLS (a CONNECT tunnel carries bytes), so a
// rule allows a host and port, not paths. A program that ignores the
// proxy variables has no network at all: that is the kernel's part
// (the network namespace), not this package's. UDP (and so DNS from
// inside) is not proxied.
package egress
