package egress

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/airlock-sandbox/airlock/policy"
)

// Rules is a compiled allow-list: the parsed rules of a policy's Egress.
type Rules struct {
	allow, deny []policy.NetRule
}

// Compile parses the rules of e (policy.Policy.Validate has checked them;
// an error here names the rule all the same).
func Compile(e policy.Egress) (*Rules, error) {
	r := &Rules{}
	for _, s := range e.Allow {
		nr, err := policy.ParseNetRule(s)
		if err != nil {
			return nil, policy.Invalid("net.allow", "%v", err)
		}
		r.allow = append(r.allow, nr)
	}
	for _, s := range e.Deny {
		nr, err := policy.ParseNetRule(s)
		if err != nil {
			return nil, policy.Invalid("net.deny", "%v", err)
		}
		r.deny = append(r.deny, nr)
	}
	return r, nil
}

// Resolver resolves host names; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// decision is what Rules say about one connection request: the
// addresses it may dial, in order, or why it is denied.
type decision struct {
	addrs  []netip.Addr
	denied string // "" = allowed
}

func deny(format string, args ...any) decision {
	return decision{denied: fmt.Sprintf(format, args...)}
}

// decide judges a request for host:port. A name is resolved only when
// an allow rule names it (no lookup leaks what a denied name was), and
// never when a deny rule does; every address it resolves to is checked
// again (Check), and only those that pass are returned. An IP literal
// needs an allow rule covering it.
func (r *Rules) decide(ctx context.Context, res Resolver, host string, port uint16) decision {
	if port == 0 {
		return deny("port 0")
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	var addrs []netip.Addr
	isName := false
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		if a.Zone() != "" {
			return deny("an address with a zone")
		}
		addrs = []netip.Addr{a.Unmap()}
	} else {
		if !validName(host) {
			return deny("%q is not a host name", host)
		}
		for _, d := range r.deny {
			if d.MatchName(host) && d.HasPort(port, true) {
				return deny("rule deny %s", d)
			}
		}
		named := false
		for _, a := range r.allow {
			named = named || a.MatchName(host) && a.HasPort(port, false)
		}
		if !named {
			return deny("no rule allows %s", joinHostPort(host, port))
		}
		var err error
		if addrs, err = res.LookupNetIP(ctx, "ip", host); err != nil {
			return deny("resolve %s: %v", host, err)
		}
		if len(addrs) == 0 {
			return deny("resolve %s: no address", host)
		}
		isName = true
	}
	var ok []netip.Addr
	first := ""
	for _, a := range addrs {
		a = a.Unmap()
		if why := r.Check(a, port, isName); why != "" {
			if first == "" {
				first = why
			}
			continue
		}
		ok = append(ok, a)
	}
	if len(ok) == 0 {
		return decision{denied: first}
	}
	return decision{addrs: ok}
}

// Check judges one address and port, after resolution: "" if it may be
// dialled, else why not. A deny rule covering it refuses it. An address
// in a special range (loopback, private, link-local, CGNAT, multicast,
// ...: see Special) passes only if an allow rule names that address or a
// prefix no wider than its range; any other address passes when named
// (its name matched an allow rule) or when an allow rule covers it.
func (r *Rules) Check(a netip.Addr, port uint16, named bool) string {
	a = a.Unmap()
	for _, d := range r.deny {
		if d.Host == "" && d.Prefix.Contains(a) && d.HasPort(port, true) {
			return fmt.Sprintf("%s: rule deny %s", a, d)
		}
	}
	block, special := Special(a)
	for _, al := range r.allow {
		if al.Host != "" || !al.Prefix.Contains(a) || !al.HasPort(port, false) {
			continue
		}
		if !special.IsValid() || al.Prefix.Bits() >= special.Bits() {
			return ""
		}
	}
	if special.IsValid() {
		return fmt.Sprintf("%s is %s and no rule names it", a, block)
	}
	if named {
		return ""
	}
	return fmt.Sprintf("no rule allows %s", joinHostPort(a.String(), port))
}

func joinHostPort(host string, port uint16) string {
	if strings.Contains(host, ":") {
		return fmt.Sprintf("[%s]:%d", host, port)
	}
	return fmt.Sprintf("%s:%d", host, port)
}

func validName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, l := range strings.Split(s, ".") {
		if l == "" || len(l) > 63 {
			return false
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}

// special are the address ranges that are not the public internet, by
// what they are.
var special = []struct {
	prefix netip.Prefix
	what   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "this network (0.0.0.0/8)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private (10.0.0.0/8)"},
	{netip.MustParsePrefix("100.64.0.0/10"), "CGNAT (100.64.0.0/10)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback (127.0.0.0/8)"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local (169.254.0.0/16, cloud metadata)"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private (172.16.0.0/12)"},
	{netip.MustParsePrefix("192.0.0.0/24"), "IETF protocol assignments (192.0.0.0/24)"},
	{netip.MustParsePrefix("192.0.2.0/24"), "documentation (192.0.2.0/24)"},
	{netip.MustParsePrefix("192.88.99.0/24"), "6to4 relay (192.88.99.0/24)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private (192.168.0.0/16)"},
	{netip.MustParsePrefix("198.18.0.0/15"), "benchmarking (198.18.0.0/15)"},
	{netip.MustParsePrefix("198.51.100.0/24"), "documentation (198.51.100.0/24)"},
	{netip.MustParsePrefix("203.0.113.0/24"), "documentation (203.0.113.0/24)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast (224.0.0.0/4)"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved (240.0.0.0/4, broadcast)"},
	{netip.MustParsePrefix("::/128"), "unspecified (::)"},
	{netip.MustParsePrefix("::1/128"), "loopback (::1)"},
	{netip.MustParsePrefix("::/96"), "IPv4-compatible (::/96)"},
	{netip.MustParsePrefix("64:ff9b::/96"), "NAT64 (64:ff9b::/96)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "local NAT64 (64:ff9b:1::/48)"},
	{netip.MustParsePrefix("100::/64"), "discard (100::/64)"},
	{netip.MustParsePrefix("2001::/23"), "IETF protocol assignments (2001::/23, Teredo)"},
	{netip.MustParsePrefix("2001:db8::/32"), "documentation (2001:db8::/32)"},
	{netip.MustParsePrefix("2002::/16"), "6to4 (2002::/16)"},
	{netip.MustParsePrefix("fc00::/7"), "unique local (fc00::/7)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local (fe80::/10)"},
	{netip.MustParsePrefix("fec0::/10"), "site-local (fec0::/10)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast (ff00::/8)"},
}

// Special reports whether a is outside the public internet, and which
// range it is in (the most specific, for ranges nested in others); the
// prefix is invalid for a public address. IPv4-mapped IPv6 addresses are
// judged as IPv4.
func Special(a netip.Addr) (string, netip.Prefix) {
	a = a.Unmap()
	what, best := "", netip.Prefix{}
	for _, s := range special {
		if s.prefix.Contains(a) && (!best.IsValid() || s.prefix.Bits() > best.Bits()) {
			what, best = s.what, s.prefix
		}
	}
	return what, best
}

// splitHostPort splits "host:port" with a port in 1-65535.
func splitHostPort(hp string) (string, uint16, bool) {
	host, ps, err := net.SplitHostPort(hp)
	if err != nil || host == "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(ps)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, false
	}
	return host, uint16(n), true
}
