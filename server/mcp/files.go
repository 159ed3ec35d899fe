package mcp

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/airlock-sandbox/airlock/policy"
	"github.com/airlock-sandbox/airlock/server"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// resourcePrefix starts a session file's resource URI:
// airlock://session/{id}/{path}.
const resourcePrefix = "airlock://session/"

func (m *MCP) readFile(ctx context.Context, req *sdk.CallToolRequest, in ReadFileIn) (*sdk.CallToolResult, FileOut, error) {
	out := FileOut{Session: in.Session, Path: in.Path}
	data, size, err := m.read(req.Session, in.Session, in.Path)
	if err != nil {
		err = asField(err, "path", "file", "file name")
		out.Error = policy.Describe(err)
		return refused(err, out)
	}
	out.Size = size
	out.Truncated = int64(len(data)) < size
	if utf8.Valid(data) || out.Truncated && utf8.Valid(trimPartialRune(data)) {
		out.Content = string(trimPartialRune(data))
	} else {
		out.Content, out.Encoding = base64.StdEncoding.EncodeToString(data), "base64"
	}
	msg := fmt.Sprintf("%s (%d bytes", in.Path, size)
	if out.Encoding != "" {
		msg += ", binary: base64 in the structured content"
	}
	if out.Truncated {
		msg += fmt.Sprintf(", only the first %d shown: this connection's cap per result", len(data))
	}
	msg += ")\n"
	if out.Encoding == "" {
		msg += out.Content
	}
	return text(msg), out, nil
}

// read reads up to MaxReturn bytes of a file of a session of ss's
// connection.
func (m *MCP) read(ss *sdk.ServerSession, session, name string) ([]byte, int64, error) {
	c, err := m.conn(ss)
	if err != nil {
		return nil, 0, err
	}
	if err := c.owns(session); err != nil {
		return nil, 0, err
	}
	return m.srv.ReadSessionFile(session, name, int64(m.cfg.MaxReturn))
}

// asField is err with the field of an invalid error renamed to the tool
// argument it came from (to) when it is one of from: the executor names
// a workspace path "file" or "file name", the tools' argument is "path".
func asField(err error, to string, from ...string) error {
	var inv *policy.InvalidError
	if errors.As(err, &inv) && slices.Contains(from, inv.Field) {
		return &policy.InvalidError{Field: to, Reason: inv.Reason}
	}
	return err
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of b.
func trimPartialRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-3; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				return b[:i]
			}
			break
		}
	}
	return b
}

func (m *MCP) writeFile(ctx context.Context, req *sdk.CallToolRequest, in WriteFileIn) (*sdk.CallToolResult, FileOut, error) {
	out := FileOut{Session: in.Session, Path: in.Path}
	c, err := m.conn(req.Session)
	if err == nil {
		err = c.owns(in.Session)
	}
	var data []byte
	if err == nil {
		data, err = decode(in.Content, in.Encoding)
	}
	if err == nil {
		err = asField(m.srv.WriteSessionFile(in.Session, in.Path, data), "path", "file", "file name")
	}
	if err != nil {
		out.Error = policy.Describe(err)
		return refused(err, out)
	}
	out.Size = int64(len(data))
	return text(fmt.Sprintf("wrote %s (%d bytes) in session %s", in.Path, len(data), in.Session)), out, nil
}

func decode(content, encoding string) ([]byte, error) {
	switch encoding {
	case "", "utf8", "utf-8":
		return []byte(content), nil
	case "base64":
		b, err := base64.StdEncoding.DecodeString(content)
		if err != nil {
			return nil, policy.Invalid("content", "not valid base64: %v", err)
		}
		return b, nil
	case "hex":
		b, err := hex.DecodeString(content)
		if err != nil {
			return nil, policy.Invalid("content", "not valid hex: %v", err)
		}
		return b, nil
	}
	return nil, policy.Invalid("encoding", "%q is not one of utf8, base64, hex", encoding)
}

func (m *MCP) listFiles(ctx context.Context, req *sdk.CallToolRequest, in SessionIn) (*sdk.CallToolResult, ListOut, error) {
	out := ListOut{Session: in.Session}
	c, err := m.conn(req.Session)
	if err == nil {
		err = c.owns(in.Session)
	}
	if err == nil {
		var l server.FileListing
		l, err = m.srv.SessionFiles(in.Session, maxListed)
		out.Files, out.Total, out.Omitted = l.Files, l.Total, l.Omitted
	}
	if err != nil {
		out.Error = policy.Describe(err)
		return refused(err, out)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d entries in /workspace of session %s", len(out.Files), in.Session)
	if out.Omitted > 0 {
		fmt.Fprintf(&b, " (%d found, %d not listed: the cap of %d; list a subdirectory with session_run, e.g. find DIR)", out.Total, out.Omitted, maxListed)
	}
	b.WriteString("\n")
	for _, f := range out.Files {
		if f.Skipped != "" && f.Skipped != "cap" {
			fmt.Fprintf(&b, "%s (%s)\n", f.Path, f.Skipped)
		} else {
			fmt.Fprintf(&b, "%s\t%d bytes\n", f.Path, f.Size)
		}
	}
	return text(b.String()), out, nil
}

// addResources exposes session files as airlock://session/{id}/{path}.
func (m *MCP) addResources() {
	m.sdk.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "session-file",
		Title:       "A file of a session's workspace",
		Description: "A file in /workspace of a session this connection opened (session_open).",
		URITemplate: resourcePrefix + "{id}/{+path}",
	}, m.readResource)
}

func (m *MCP) readResource(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	rest, ok := strings.CutPrefix(uri, resourcePrefix)
	id, name, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	if p, err := url.PathUnescape(name); err == nil {
		name = p
	}
	data, size, err := m.read(req.Session, id, name)
	if err != nil {
		if notFound(err) {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		info := policy.Describe(asField(err, "path", "file", "file name"))
		code := int64(jsonrpc.CodeInternalError)
		if info.Class == policy.ClassInvalid {
			code = jsonrpc.CodeInvalidParams
		}
		return nil, &jsonrpc.Error{Code: code, Message: fmt.Sprintf("%s (%s)", info.Message, retryHint(info))}
	}
	if int64(len(data)) < size {
		return nil, fmt.Errorf("%s is %d bytes, more than this connection's %d per result; read it in parts with session_run", name, size, m.cfg.MaxReturn)
	}
	rc := &sdk.ResourceContents{URI: uri}
	if utf8.Valid(data) {
		rc.MIMEType, rc.Text = "text/plain", string(data)
	} else {
		rc.MIMEType, rc.Blob = "application/octet-stream", data
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{rc}}, nil
}
