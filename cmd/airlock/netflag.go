package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/airlock-sandbox/airlock/egress"
	"github.com/airlock-sandbox/airlock/policy"
)

// netFlags applies the --net flags to p, in order: a mode (none,
// loopback, host), or allow:RULE[,RULE...] and deny:RULE[,...], which
// add to the rules (a policy file's included) and make the mode allow.
// Each rule is checked here, so the error names the flag.
func netFlags(p *policy.Policy, values []string) error {
	rules, mode := false, ""
	for _, v := range values {
		kind, list, ok := strings.Cut(v, ":")
		if !ok || (kind != "allow" && kind != "deny") {
			switch policy.Net(v) {
			case policy.NetNone, policy.NetLoopback, policy.NetHost:
			default:
				hint := ""
				if c := closest(strings.ToLower(v), []string{"none", "loopback", "host"}); c != "" {
					hint = " (did you mean " + c + "?)"
				}
				return policy.Invalid("--net", "%q is not one of none, loopback, host, allow:RULES, deny:RULES%s; example: --net none", v, hint)
			}
			if rules {
				return policy.Invalid("--net", "%s cannot be combined with --net allow: or deny: rules", v)
			}
			p.Net, mode = policy.Net(v), v
			continue
		}
		if list == "" {
			return policy.Invalid("--net", "%s names no rule: give %s:HOST[:PORT],... (a host, *.suffix, IP or CIDR)", v, kind)
		}
		for _, r := range strings.Split(list, ",") {
			if _, err := policy.ParseNetRule(r); err != nil {
				return policy.Invalid("--net", "%s: %v", kind, err)
			}
			if kind == "allow" {
				p.Egress.Allow = append(p.Egress.Allow, r)
			} else {
				p.Egress.Deny = append(p.Egress.Deny, r)
			}
		}
		if mode != "" {
			return policy.Invalid("--net", "%s cannot be combined with --net %s", v, mode)
		}
		rules, p.Net = true, policy.NetAllow
	}
	return nil
}

// printDenials is --verbose's report: one stderr line for each
// connection the egress proxy refused.
func printDenials(conns []egress.Conn, stderr io.Writer) {
	for _, c := range conns {
		if c.Denied() {
			fmt.Fprintf(stderr, "airlock: net: %s %s:%d %s\n", c.Protocol, c.Host, c.Port, c.Verdict)
		}
	}
}
