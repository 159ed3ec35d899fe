package e2b

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Connect protocol (connectrpc.com), JSON codec only, as envd speaks
// it and E2B's SDKs call it (useBinaryFormat: false):
//
//   - unary: POST /pkg.Service/Method, Content-Type application/json,
//     the request message as the body; the answer is 200 with the
//     response message, or an HTTP error status with the error object
//     {"code": "not_found", "message": "..."};
//   - server streaming: Content-Type application/connect+json; the body
//     is one envelope, the answer 200 and a sequence of envelopes (one
//     byte of flags, four of big-endian length, the JSON message), the
//     last with flag 0x02 carrying {} or {"error": {...}}.
//
// Connect-Timeout-Ms bounds a call. The binary (proto) codec, compression
// and client streams are refused, naming what to send instead.

const (
	flagCompressed = 0x01
	flagEndStream  = 0x02
	maxEnvelope    = 16 << 20
)

// rpcError is a Connect error: a code of the protocol's list and a
// message for people.
type rpcError struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

func (e *rpcError) Error() string { return e.Code + ": " + e.Message }

func rpcErr(code, format string, args ...any) *rpcError {
	return &rpcError{Code: code, Message: fmt.Sprintf(format, args...)}
}

// httpStatus is the HTTP status a unary call answers a code with (the
// Connect protocol's table).
func httpStatus(code string) int {
	switch code {
	case "canceled":
		return 499
	case "invalid_argument", "failed_precondition", "out_of_range":
		return http.StatusBadRequest
	case "deadline_exceeded":
		return http.StatusGatewayTimeout
	case "not_found":
		return http.StatusNotFound
	case "already_exists", "aborted":
		return http.StatusConflict
	case "permission_denied":
		return http.StatusForbidden
	case "resource_exhausted":
		return http.StatusTooManyRequests
	case "unimplemented":
		return http.StatusNotImplemented
	case "unavailable":
		return http.StatusServiceUnavailable
	case "unauthenticated":
		return http.StatusUnauthorized
	default:
		return http.StatusInternalServerError
	}
}

// asRPC turns any error into a Connect error (internal when it is none).
func asRPC(err error) *rpcError {
	var re *rpcError
	if errors.As(err, &re) {
		return re
	}
	return &rpcError{Code: "internal", Message: err.Error()}
}

// decodeMessage decodes a JSON message strictly: a field this server does
// not know is an error naming it, never dropped.
func decodeMessage(b []byte, v any) error {
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return rpcErr("invalid_argument", "the request message: %v", err)
	}
	if dec.More() {
		return rpcErr("invalid_argument", "the request message: trailing data")
	}
	return nil
}

// timeoutOf reads Connect-Timeout-Ms (0: none).
func timeoutOf(r *http.Request) (time.Duration, error) {
	v := r.Header.Get("Connect-Timeout-Ms")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || len(v) > 10 {
		return 0, rpcErr("invalid_argument", "Connect-Timeout-Ms %q: want at most 10 digits", v)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// checkCodec refuses what the JSON codec does not cover.
func checkCodec(r *http.Request, stream bool) *rpcError {
	ct := strings.ToLower(strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]))
	want := "application/json"
	if stream {
		want = "application/connect+json"
	}
	if ct != want {
		return rpcErr("invalid_argument", "Content-Type %q: this server speaks the Connect protocol's JSON codec only; send %s (useBinaryFormat: false)", ct, want)
	}
	for _, h := range []string{"Content-Encoding", "Connect-Content-Encoding"} {
		if e := r.Header.Get(h); e != "" && e != "identity" {
			return rpcErr("unimplemented", "%s %q: compressed messages are not supported; send them uncompressed", h, e)
		}
	}
	return nil
}

// writeUnaryError answers a unary call with its error.
func writeUnaryError(w http.ResponseWriter, err error) {
	re := asRPC(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(httpStatus(re.Code))
	json.NewEncoder(w).Encode(re)
}

// readEnvelope reads one envelope of a stream's request body.
func readEnvelope(r io.Reader) ([]byte, byte, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, 0, rpcErr("invalid_argument", "the request envelope: %v", err)
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxEnvelope {
		return nil, 0, rpcErr("resource_exhausted", "the request message is %d bytes; at most %d", n, maxEnvelope)
	}
	if h[0]&flagCompressed != 0 {
		return nil, 0, rpcErr("unimplemented", "a compressed request message: send it uncompressed")
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, 0, rpcErr("invalid_argument", "the request message: %v", err)
	}
	return b, h[0], nil
}

// envelope frames one message.
func envelope(flags byte, msg []byte) []byte {
	b := make([]byte, 5+len(msg))
	b[0] = flags
	binary.BigEndian.PutUint32(b[1:], uint32(len(msg)))
	copy(b[5:], msg)
	return b
}

// stream is the answer of a server-streaming call: messages, then the
// end-stream message. Safe for concurrent Send (keepalives run beside
// the events).
type stream struct {
	mu    sync.Mutex
	w     http.ResponseWriter
	fl    http.Flusher
	ended bool
	err   error // the first write's failure: the client went away
}

func newStream(w http.ResponseWriter) *stream {
	w.Header().Set("Content-Type", "application/connect+json")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	s := &stream{w: w, fl: fl}
	if fl != nil {
		fl.Flush()
	}
	return s
}

// Send writes one message.
func (s *stream) Send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.write(0, b)
}

func (s *stream) write(flags byte, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.ended {
		return errors.New("stream ended")
	}
	if _, err := s.w.Write(envelope(flags, b)); err != nil {
		s.err = err
		return err
	}
	if s.fl != nil {
		s.fl.Flush()
	}
	return nil
}

// End writes the end-stream message: {} or the error. Once.
func (s *stream) End(err error) {
	msg := []byte("{}")
	if err != nil {
		msg, _ = json.Marshal(struct {
			Error *rpcError `json:"error"`
		}{asRPC(err)})
	}
	s.write(flagEndStream, msg)
	s.mu.Lock()
	s.ended = true
	s.mu.Unlock()
}

// keepaliveInterval is the client's Keepalive-Ping-Interval (seconds),
// clamped to [1 s, 5 min]; 30 s when it sends none.
func keepaliveInterval(r *http.Request) time.Duration {
	n, err := strconv.Atoi(r.Header.Get("Keepalive-Ping-Interval"))
	switch {
	case err != nil:
		return 30 * time.Second
	case n < 1:
		return time.Second
	case n > 300:
		return 5 * time.Minute
	}
	return time.Duration(n) * time.Second
}

// int64s is an int64 in protobuf's JSON form: a decimal string (a number
// is taken on input too).
type int64s int64

func (v int64s) MarshalJSON() ([]byte, error) {
	return []byte(`"` + strconv.FormatInt(int64(v), 10) + `"`), nil
}

func (v *int64s) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("int64 %s: %v", b, err)
	}
	*v = int64s(n)
	return nil
}
