package egress

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// SOCKS5 (RFC 1928) constants.
const (
	socksVersion   = 5
	socksNoAuth    = 0
	socksNoMethod  = 0xff
	socksConnect   = 1
	atypIPv4       = 1
	atypDomain     = 3
	atypIPv6       = 4
	repSucceeded   = 0
	repNotAllowed  = 2
	repHostUnreach = 4
	repCmdUnsupp   = 7
	repAtypUnsupp  = 8
)

// serveSOCKS serves one SOCKS5 request: no authentication, CONNECT
// only, to an IPv4, IPv6 or domain-name address (the name is resolved
// here, never in the sandbox).
func (p *Proxy) serveSOCKS(c net.Conn, br *bufio.Reader, head *capReader) {
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil {
		return
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return
	}
	method := byte(socksNoMethod)
	for _, m := range methods {
		if m == socksNoAuth {
			method = socksNoAuth
		}
	}
	if _, err := c.Write([]byte{socksVersion, method}); err != nil || method != socksNoAuth {
		return
	}
	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil || req[0] != socksVersion {
		return
	}
	var host string
	switch req[3] {
	case atypIPv4, atypIPv6:
		b := make([]byte, 4)
		if req[3] == atypIPv6 {
			b = make([]byte, 16)
		}
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		a, _ := netip.AddrFromSlice(b)
		host = a.String()
	case atypDomain:
		n, err := br.ReadByte()
		if err != nil {
			return
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			return
		}
		host = string(b)
	default:
		socksReply(c, repAtypUnsupp)
		return
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return
	}
	if req[1] != socksConnect {
		p.refuse("socks5", host, binary.BigEndian.Uint16(pb[:]), fmt.Sprintf("SOCKS5 command %d (only CONNECT is served)", req[1]))
		socksReply(c, repCmdUnsupp)
		return
	}
	c.SetReadDeadline(time.Time{})
	head.lift()
	r, up := p.open("socks5", host, binary.BigEndian.Uint16(pb[:]))
	if up == nil {
		if r.snapshot().Denied() {
			socksReply(c, repNotAllowed)
		} else {
			socksReply(c, repHostUnreach)
		}
		return
	}
	if socksReply(c, repSucceeded) != nil {
		up.Close()
		r.end("")
		return
	}
	p.relay(r, c, br, up)
}

// socksReply answers a request; the bound address is not disclosed
// (0.0.0.0:0).
func socksReply(c net.Conn, rep byte) error {
	_, err := c.Write([]byte{socksVersion, rep, 0, atypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}
