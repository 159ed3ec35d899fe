package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// NetAllow is egress by allow-list: the sandbox keeps a network namespace
// of its own with only lo, and its one way out is the supervisor's
// HTTP/SOCKS5 proxy, reached through a listener on the sandbox's
// loopback, which admits only what Egress allows (see docs/network.md).
const NetAllow Net = "allow"

// Egress is the allow-list of a policy whose Net is NetAllow. In a
// policy document it is the value of net, an object:
//
//	net: {"allow": ["pypi.org", "*.pythonhosted.org:443"], "deny": ["10.0.0.0/8"]}
//
// The zero value of each limit means its default.
type Egress struct {
	// Allow lists the rules a connection must match (see ParseNetRule).
	Allow []string `json:"allow,omitempty"`
	// Deny lists rules that refuse a connection whatever Allow says. A
	// deny rule without a port covers every port.
	Deny []string `json:"deny,omitempty"`
	// MaxConnections caps the sandbox's concurrent connections through
	// the proxy. 0 = 64.
	MaxConnections int `json:"max_connections,omitempty"`
	// MaxBytes caps the bytes of all connections, up and down together;
	// past it every connection is cut. 0 = 1 GiB.
	MaxBytes Size `json:"max_bytes,omitempty"`
	// IdleTimeout cuts a connection with no traffic either way for this
	// long. 0 = 60s.
	IdleTimeout Duration `json:"idle_timeout,omitempty"`
}

// Egress defaults.
const (
	DefaultMaxConnections = 64
	DefaultMaxBytes       = 1 << 30
	DefaultIdleTimeout    = 60 * time.Second
)

func (e *Egress) empty() bool {
	return len(e.Allow) == 0 && len(e.Deny) == 0 && e.MaxConnections == 0 && e.MaxBytes == 0 && e.IdleTimeout == 0
}

// Limits returns the limits in force: each field, or its default.
func (e *Egress) Limits() (conns int, bytes int64, idle time.Duration) {
	conns, bytes, idle = e.MaxConnections, int64(e.MaxBytes), time.Duration(e.IdleTimeout)
	if conns == 0 {
		conns = DefaultMaxConnections
	}
	if bytes == 0 {
		bytes = DefaultMaxBytes
	}
	if idle == 0 {
		idle = DefaultIdleTimeout
	}
	return conns, bytes, idle
}

// validate checks the rules and limits of net allow (field names the
// policy field, "net").
func (e *Egress) validate() error {
	if len(e.Allow) == 0 {
		return Invalid("net.allow", "net allow names no rule: give at least one host, *.suffix, IP or CIDR (net none for no network)")
	}
	for i, r := range e.Allow {
		if _, err := ParseNetRule(r); err != nil {
			return Invalid(fmt.Sprintf("net.allow[%d]", i), "%v", err)
		}
	}
	for i, r := range e.Deny {
		if _, err := ParseNetRule(r); err != nil {
			return Invalid(fmt.Sprintf("net.deny[%d]", i), "%v", err)
		}
	}
	switch {
	case e.MaxConnections < 0:
		return Invalid("net.max_connections", "must not be negative")
	case e.MaxBytes < 0:
		return Invalid("net.max_bytes", "must not be negative")
	case e.IdleTimeout < 0:
		return Invalid("net.idle_timeout", "must not be negative")
	}
	return nil
}

// NetRule is one parsed allow or deny rule: a host name, a *.suffix
// wildcard, or an IP prefix (an address is a /32 or /128), with a port
// range.
type NetRule struct {
	// Host is a lower-case host name without a trailing dot; "" for an
	// IP rule.
	Host string
	// Suffix says Host is a wildcard's suffix: the rule matches the
	// names that end in "."+Host (not Host itself).
	Suffix bool
	// Prefix is an IP rule's addresses (invalid for name rules).
	Prefix netip.Prefix
	// PortLo..PortHi is the port range; 0..0 when the rule names no
	// port: 80 and 443 for an allow rule, every port for a deny rule.
	PortLo, PortHi uint16
}

// ParseNetRule parses a rule: HOST, *.SUFFIX, IP or CIDR, each with an
// optional :PORT or :LO-HI (an IPv6 address or prefix with a port in
// brackets: [fd00::/8]:443). A prefix of length 0 (every address) needs
// an explicit port.
func ParseNetRule(s string) (NetRule, error) {
	var r NetRule
	host, port, err := splitRule(s)
	if err != nil {
		return r, err
	}
	if port != "" {
		if r.PortLo, r.PortHi, err = parsePorts(port); err != nil {
			return r, fmt.Errorf("rule %q: %w", s, err)
		}
	}
	if p, err := parsePrefix(host); err == nil {
		if p.Bits() == 0 && port == "" {
			return r, fmt.Errorf("rule %q matches every address: give it a port (e.g. %s:443), or name the hosts", s, bracket(host))
		}
		r.Prefix = p
		return r, nil
	}
	name := strings.ToLower(host)
	if rest, ok := strings.CutPrefix(name, "*."); ok {
		r.Suffix, name = true, rest
		if strings.TrimSuffix(name, ".") == "" {
			return r, fmt.Errorf("rule %q: the wildcard has no suffix (write *.example.com)", s)
		}
	}
	name = strings.TrimSuffix(name, ".")
	if err := checkHostName(name); err != nil {
		return r, fmt.Errorf("rule %q: %w", s, err)
	}
	r.Host = name
	return r, nil
}

// splitRule splits a rule into its host part and its port part ("" when
// none).
func splitRule(s string) (string, string, error) {
	if s == "" {
		return "", "", fmt.Errorf("empty rule")
	}
	if rest, ok := strings.CutPrefix(s, "["); ok {
		host, after, ok := strings.Cut(rest, "]")
		if !ok || (after != "" && !strings.HasPrefix(after, ":")) {
			return "", "", fmt.Errorf("rule %q: want [IPv6]:PORT", s)
		}
		port := strings.TrimPrefix(after, ":")
		if after != "" && port == "" {
			return "", "", fmt.Errorf("rule %q: empty port", s)
		}
		return host, port, nil
	}
	if strings.Count(s, ":") > 1 {
		return s, "", nil // a bare IPv6 address or prefix
	}
	host, port, ok := strings.Cut(s, ":")
	if ok && port == "" {
		return "", "", fmt.Errorf("rule %q: empty port", s)
	}
	if host == "" {
		return "", "", fmt.Errorf("rule %q names no host", s)
	}
	return host, port, nil
}

func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return p, err
		}
		if p.Addr().Zone() != "" {
			return netip.Prefix{}, fmt.Errorf("zone in prefix")
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, fmt.Errorf("not an address")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

func parsePorts(s string) (uint16, uint16, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	l, err := parsePort(lo)
	if err != nil {
		return 0, 0, err
	}
	h := l
	if isRange {
		if h, err = parsePort(hi); err != nil {
			return 0, 0, err
		}
		if h < l {
			return 0, 0, fmt.Errorf("port range %s is empty (low-high)", s)
		}
	}
	return l, h, nil
}

func parsePort(s string) (uint16, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not a number in 1-65535", s)
	}
	return uint16(n), nil
}

// checkHostName accepts DNS names: labels of letters, digits, '-' and
// '_', 1-63 bytes each, 253 in all.
func checkHostName(name string) error {
	if name == "" || len(name) > 253 {
		return fmt.Errorf("not a host name, IP or CIDR")
	}
	for _, l := range strings.Split(name, ".") {
		if l == "" || len(l) > 63 {
			return fmt.Errorf("not a host name, IP or CIDR (empty or long label)")
		}
		for _, c := range l {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("not a host name, IP or CIDR (character %q; a wildcard is *. at the start only)", c)
			}
		}
	}
	return nil
}

func bracket(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// HasPort reports whether the rule covers port; a rule with no port
// covers 80 and 443 when allowing, every port when denying.
func (r NetRule) HasPort(port uint16, deny bool) bool {
	if r.PortLo == 0 {
		return deny || port == 80 || port == 443
	}
	return port >= r.PortLo && port <= r.PortHi
}

// MatchName reports whether a name rule matches a host name (lower case,
// no trailing dot).
func (r NetRule) MatchName(name string) bool {
	if r.Host == "" {
		return false
	}
	if r.Suffix {
		return strings.HasSuffix(name, "."+r.Host)
	}
	return name == r.Host
}

// String is the rule as ParseNetRule reads it.
func (r NetRule) String() string {
	var h string
	switch {
	case r.Host != "" && r.Suffix:
		h = "*." + r.Host
	case r.Host != "":
		h = r.Host
	case r.Prefix.IsSingleIP():
		h = r.Prefix.Addr().String()
	default:
		h = r.Prefix.String()
	}
	switch {
	case r.PortLo == 0:
		return h
	case r.PortLo == r.PortHi:
		return fmt.Sprintf("%s:%d", bracket(h), r.PortLo)
	}
	return fmt.Sprintf("%s:%d-%d", bracket(h), r.PortLo, r.PortHi)
}

// policyFields is Policy without its methods, for its JSON form.
type policyFields Policy

// policyJSON is a policy's JSON form: its fields, with net either a mode
// ("none", "loopback", "host") or the object of net allow.
type policyJSON struct {
	*policyFields
	Net *netJSON `json:"net,omitempty"`
}

// netJSON is the value of net: a string, or an Egress object (NetAllow).
type netJSON struct {
	mode   Net
	egress Egress
}

func (n netJSON) MarshalJSON() ([]byte, error) {
	if n.mode == NetAllow {
		return json.Marshal(n.egress)
	}
	return json.Marshal(string(n.mode))
}

func (n *netJSON) UnmarshalJSON(b []byte) error {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(t))
		dec.DisallowUnknownFields()
		var e Egress
		if err := dec.Decode(&e); err != nil {
			var typ *json.UnmarshalTypeError
			if errors.As(err, &typ) {
				return Invalid("net."+typ.Field, "%s cannot be %s", article(typ.Value), kindOf(typ.Type))
			}
			return Invalid("net", "%s (net is none, loopback, host, or {\"allow\": [...], \"deny\": [...]})", strings.TrimPrefix(err.Error(), "json: "))
		}
		n.mode, n.egress = NetAllow, e
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("net is none, loopback, host, or {\"allow\": [...], \"deny\": [...]}, not %s", b)
	}
	n.mode = Net(s)
	return nil
}

// jsonForm is p's JSON form, sharing p's fields.
func (p *Policy) jsonForm() *policyJSON {
	j := &policyJSON{policyFields: (*policyFields)(p)}
	if p.Net != "" || !p.Egress.empty() {
		j.Net = &netJSON{mode: p.Net, egress: p.Egress}
	}
	return j
}

// fromJSON takes net back from a decoded JSON form.
func (p *Policy) fromJSON(j *policyJSON) {
	if j.Net != nil {
		p.Net, p.Egress = j.Net.mode, j.Net.egress
	}
}

// MarshalJSON writes net as its mode, or as the object of net allow.
func (p Policy) MarshalJSON() ([]byte, error) { return json.Marshal(p.jsonForm()) }

// UnmarshalJSON reads a policy object strictly (unknown fields are an
// error); it does not validate (Parse does).
func (p *Policy) UnmarshalJSON(b []byte) error {
	var q Policy
	j := &policyJSON{policyFields: (*policyFields)(&q)}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(j); err != nil {
		return err
	}
	q.fromJSON(j)
	*p = q
	return nil
}
