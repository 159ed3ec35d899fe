package e2b

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testServer serves a Handler over the fake backend as server.go mounts
// it: the control paths on a mux, the data plane before it; the tenant is
// the X-API-KEY sent.
func testServer(t *testing.T) (*Handler, *httptest.Server) {
	t.Helper()
	h := New(Config{Backend: &fakeBackend{dir: t.TempDir()}, Tenant: func(r *http.Request) (string, error) { return "key:" + r.Header.Get("X-API-KEY"), nil }})
	mux := http.NewServeMux()
	for _, p := range ControlPaths {
		mux.Handle(p, h.Control())
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsDataPlane(r) {
			h.Data().ServeHTTP(w, r)
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { ts.Close(); h.Close() })
	return h, ts
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func do(t *testing.T, method, url string, hdr map[string]string, body string) resp {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return resp{res.StatusCode, res.Header, b}
}

func create(t *testing.T, ts *httptest.Server, key, body string) sandboxCreated {
	t.Helper()
	r := do(t, "POST", ts.URL+"/v2/sandboxes", map[string]string{"X-API-KEY": key}, body)
	if r.status != http.StatusCreated {
		t.Fatalf("create %s: %d %s", body, r.status, r.body)
	}
	var c sandboxCreated
	if err := json.Unmarshal(r.body, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func envdHeaders(c sandboxCreated) map[string]string {
	return map[string]string{"E2b-Sandbox-Id": c.SandboxID, "E2b-Sandbox-Port": "49983", "X-Access-Token": c.EnvdAccessToken}
}

func TestCreateRefusesWhatItCannotDo(t *testing.T) {
	_, ts := testServer(t)
	for body, want := range map[string]string{
		`{"templateID":"desktop"}`: `template \"desktop\" is not served`,
		`{}`:                       "templateID: required",
		`{"templateID":"base","network":{"allowPublicTraffic":true}}`:     "network is not supported",
		`{"templateID":"base","mcp":{"x":{}}}`:                            "mcp is not supported",
		`{"templateID":"base","allow_internet_access":true}`:              "allow_internet_access",
		`{"templateID":"base","autoPause":true}`:                          "autoPause",
		`{"templateID":"base","secure":false}`:                            "secure: false",
		`{"templateID":"base","volumeMounts":[{"name":"v","path":"/d"}]}`: "volumeMounts",
		`{"templateID":"base","gpu":1}`:                                   `unknown field \"gpu\"`,
		`{"templateID":"base","timeout":999999}`:                          "timeout 999999 s",
	} {
		r := do(t, "POST", ts.URL+"/v2/sandboxes", map[string]string{"X-API-KEY": "a"}, body)
		if r.status != http.StatusBadRequest || !bytes.Contains(r.body, []byte(want)) {
			t.Errorf("%s: %d %s, want 400 with %q", body, r.status, r.body, want)
		}
	}
}

// One tenant never reaches another's sandboxes: every route answers the
// 404 of an id that does not exist, and its list is empty.
func TestTenantsAreApart(t *testing.T) {
	h, ts := testServer(t)
	c := create(t, ts, "a", `{"templateID":"base","metadata":{"k":"v"},"timeout":60}`)
	id := c.SandboxID
	other := map[string]string{"X-API-KEY": "b"}
	for _, rt := range [][2]string{{"GET", "/sandboxes/" + id}, {"DELETE", "/sandboxes/" + id}, {"POST", "/sandboxes/" + id + "/timeout"},
		{"POST", "/sandboxes/" + id + "/pause"}, {"POST", "/v2/sandboxes/" + id + "/connect"}} {
		r := do(t, rt[0], ts.URL+rt[1], other, `{"timeout":5}`)
		if r.status != http.StatusNotFound {
			t.Errorf("%s %s by another tenant: %d %s, want 404", rt[0], rt[1], r.status, r.body)
		}
	}
	if r := do(t, "GET", ts.URL+"/v2/sandboxes", other, ""); string(bytes.TrimSpace(r.body)) != "[]" {
		t.Errorf("another tenant's list: %s", r.body)
	}
	if h.Count() != 1 {
		t.Errorf("%d sandboxes, want the one still there", h.Count())
	}
	if r := do(t, "GET", ts.URL+"/sandboxes/"+id, map[string]string{"X-API-KEY": "a"}, ""); r.status != http.StatusOK {
		t.Errorf("its own tenant: %d %s", r.status, r.body)
	}
}

// The data plane needs the sandbox's own token, compared whole: none, a
// wrong one, another sandbox's, or the traffic token on envd are 401.
func TestDataPlaneNeedsTheSandboxToken(t *testing.T) {
	_, ts := testServer(t)
	a := create(t, ts, "a", `{"templateID":"base","timeout":60}`)
	b := create(t, ts, "a", `{"templateID":"base","timeout":60}`)
	health := func(hdr map[string]string) int { return do(t, "GET", ts.URL+"/health", hdr, "").status }
	if s := health(envdHeaders(a)); s != http.StatusNoContent {
		t.Fatalf("with its token: %d", s)
	}
	for name, tok := range map[string]string{"none": "", "wrong": "x" + a.EnvdAccessToken[1:], "prefix": a.EnvdAccessToken[:10], "another sandbox's": b.EnvdAccessToken, "the traffic token": a.TrafficAccessToken} {
		hdr := envdHeaders(a)
		hdr["X-Access-Token"] = tok
		if s := health(hdr); s != http.StatusUnauthorized {
			t.Errorf("%s token: %d, want 401", name, s)
		}
	}
	hdr := envdHeaders(a)
	delete(hdr, "X-Access-Token")
	hdr["E2B-Traffic-Access-Token"] = a.TrafficAccessToken
	if s := health(hdr); s != http.StatusUnauthorized {
		t.Errorf("envd with the traffic token: %d, want 401", s)
	}
	hdr = envdHeaders(a)
	hdr["E2b-Sandbox-Id"] = "0000000000000000"
	if s := health(hdr); s != http.StatusBadGateway {
		t.Errorf("an unknown sandbox: %d, want 502 (not running)", s)
	}
	// A paused sandbox's data plane answers 502 (not running) until it
	// is resumed.
	key := map[string]string{"X-API-KEY": "a"}
	if r := do(t, "POST", ts.URL+"/sandboxes/"+a.SandboxID+"/pause", key, ""); r.status != http.StatusNoContent {
		t.Fatalf("pause: %d %s", r.status, r.body)
	}
	if s := health(envdHeaders(a)); s != http.StatusBadGateway {
		t.Errorf("paused: %d, want 502", s)
	}
	if r := do(t, "POST", ts.URL+"/v2/sandboxes/"+a.SandboxID+"/connect", key, `{"timeout":60}`); r.status != http.StatusCreated {
		t.Fatalf("connect (resume): %d %s", r.status, r.body)
	}
	if s := health(envdHeaders(a)); s != http.StatusNoContent {
		t.Errorf("resumed: %d", s)
	}
	// The code interpreter's port takes the traffic token.
	ci := map[string]string{"E2b-Sandbox-Id": a.SandboxID, "E2b-Sandbox-Port": "49999", "E2B-Traffic-Access-Token": a.TrafficAccessToken}
	if r := do(t, "GET", ts.URL+"/contexts", ci, ""); r.status != http.StatusOK {
		t.Errorf("contexts with the traffic token: %d %s", r.status, r.body)
	}
}

func TestListFiltersAndPages(t *testing.T) {
	_, ts := testServer(t)
	var ids []string
	for i := range 3 {
		role := []string{"x", "y", "x"}[i]
		ids = append(ids, create(t, ts, "a", `{"templateID":"base","timeout":60,"metadata":{"role":"`+role+`","suite":"s"}}`).SandboxID)
		time.Sleep(2 * time.Millisecond)
	}
	key := map[string]string{"X-API-KEY": "a"}
	list := func(q string) ([]string, string) {
		r := do(t, "GET", ts.URL+"/v2/sandboxes?"+q, key, "")
		if r.status != http.StatusOK {
			t.Fatalf("%s: %d %s", q, r.status, r.body)
		}
		var l []sandboxListed
		json.Unmarshal(r.body, &l)
		var out []string
		for _, s := range l {
			out = append(out, s.SandboxID)
		}
		return out, r.header.Get("X-Next-Token")
	}
	got, _ := list("metadata=" + "role%3Dx")
	if strings.Join(got, ",") != ids[2]+","+ids[0] {
		t.Errorf("role=x: %v, want [%s %s] (newest first)", got, ids[2], ids[0])
	}
	p1, next := list("limit=2&order=asc")
	if strings.Join(p1, ",") != ids[0]+","+ids[1] || next == "" {
		t.Fatalf("page 1: %v next %q", p1, next)
	}
	p2, next2 := list("limit=2&order=asc&nextToken=" + next)
	if strings.Join(p2, ",") != ids[2] || next2 != "" {
		t.Errorf("page 2: %v next %q", p2, next2)
	}
	if got, _ := list("state=paused"); len(got) != 0 {
		t.Errorf("paused: %v", got)
	}
	if r := do(t, "GET", ts.URL+"/v2/sandboxes?state=stopped", key, ""); r.status != http.StatusBadRequest {
		t.Errorf("state=stopped: %d", r.status)
	}
	if r := do(t, "GET", ts.URL+"/v2/sandboxes?startedAfter=2020-01-01T00:00:00Z", key, ""); r.status != http.StatusBadRequest {
		t.Errorf("an unsupported filter was not refused: %d", r.status)
	}
}

func TestEnvelopes(t *testing.T) {
	msg := []byte(`{"a":1}`)
	b, flags, err := readEnvelope(bytes.NewReader(envelope(0, msg)))
	if err != nil || flags != 0 || string(b) != string(msg) {
		t.Fatalf("round trip: %q %d %v", b, flags, err)
	}
	if _, _, err := readEnvelope(bytes.NewReader(envelope(flagCompressed, msg))); asRPC(err).Code != "unimplemented" {
		t.Errorf("a compressed message: %v", err)
	}
	var big [5]byte
	binary.BigEndian.PutUint32(big[1:], maxEnvelope+1)
	if _, _, err := readEnvelope(bytes.NewReader(big[:])); asRPC(err).Code != "resource_exhausted" {
		t.Errorf("an oversized message: %v", err)
	}
	if _, _, err := readEnvelope(bytes.NewReader(envelope(0, msg)[:6])); asRPC(err).Code != "invalid_argument" {
		t.Errorf("a truncated message: %v", err)
	}
	var v int64s
	if err := json.Unmarshal([]byte(`"-12"`), &v); err != nil || v != -12 {
		t.Errorf("int64 string: %v %v", v, err)
	}
	if out, _ := json.Marshal(int64s(7)); string(out) != `"7"` {
		t.Errorf("int64 out: %s", out)
	}
}

// callStream calls one server-streaming RPC and returns its messages and the
// end-stream message.
func callStream(t *testing.T, ts *httptest.Server, c sandboxCreated, method string, req any, hdr map[string]string) ([]map[string]any, map[string]any) {
	t.Helper()
	body, _ := json.Marshal(req)
	r, _ := http.NewRequest("POST", ts.URL+method, bytes.NewReader(envelope(0, body)))
	for k, v := range envdHeaders(c) {
		r.Header.Set(k, v)
	}
	r.Header.Set("Content-Type", "application/connect+json")
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/connect+json" {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("%s: %d %s %s", method, res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	var msgs []map[string]any
	for {
		b, flags, err := readEnvelope(res.Body)
		if err != nil {
			t.Fatalf("%s: no end-stream message: %v", method, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %q: %v", method, b, err)
		}
		if flags&flagEndStream != 0 {
			return msgs, m
		}
		msgs = append(msgs, m)
	}
}

func TestProcessStartStream(t *testing.T) {
	_, ts := testServer(t)
	c := create(t, ts, "a", `{"templateID":"base","timeout":60}`)
	msgs, end := callStream(t, ts, c, "/process.Process/Start", map[string]any{"process": map[string]any{"cmd": "/bin/sh", "args": []string{"-c", "printf out; printf err >&2; exit 3"}}}, nil)
	if len(end) != 0 {
		t.Fatalf("end-stream: %v", end)
	}
	if msgs[0]["event"].(map[string]any)["start"] == nil {
		t.Fatalf("the first event is not start: %v", msgs[0])
	}
	var out, errs string
	var last map[string]any
	for _, m := range msgs[1:] {
		ev := m["event"].(map[string]any)
		if d, ok := ev["data"].(map[string]any); ok {
			for k, v := range d {
				b, _ := base64.StdEncoding.DecodeString(v.(string))
				if k == "stdout" {
					out += string(b)
				} else {
					errs += string(b)
				}
			}
		}
		if e, ok := ev["end"].(map[string]any); ok {
			last = e
		}
	}
	if out != "out" || errs != "err" {
		t.Errorf("stdout %q stderr %q", out, errs)
	}
	if last == nil || last["exitCode"] != float64(3) || last["exited"] != true || last["status"] != "exit status 3" {
		t.Errorf("end event: %v", last)
	}
	// A timeout (Connect-Timeout-Ms) kills it and ends the stream with
	// deadline_exceeded.
	_, end = callStream(t, ts, c, "/process.Process/Start", map[string]any{"process": map[string]any{"cmd": "sleep", "args": []string{"30"}}}, map[string]string{"Connect-Timeout-Ms": "200"})
	if e, _ := end["error"].(map[string]any); e == nil || e["code"] != "deadline_exceeded" {
		t.Errorf("a timed-out command's end-stream: %v", end)
	}
	// A field the server does not know is refused, naming it.
	_, end = callStream(t, ts, c, "/process.Process/Start", map[string]any{"process": map[string]any{"cmd": "true"}, "priority": 1}, nil)
	if e, _ := end["error"].(map[string]any); e == nil || e["code"] != "invalid_argument" || !strings.Contains(e["message"].(string), "priority") {
		t.Errorf("an unknown field: %v", end)
	}
	// A user other than the sandbox's is refused.
	_, end = callStream(t, ts, c, "/process.Process/Start", map[string]any{"process": map[string]any{"cmd": "true"}}, map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte("root:"))})
	if e, _ := end["error"].(map[string]any); e == nil || e["code"] != "permission_denied" {
		t.Errorf("user root: %v", end)
	}
}

func TestUnaryRPCs(t *testing.T) {
	_, ts := testServer(t)
	c := create(t, ts, "a", `{"templateID":"base","timeout":60}`)
	call := func(method, body string) resp {
		return do(t, "POST", ts.URL+method, envdHeaders(c), body)
	}
	if r := call("/filesystem.Filesystem/MakeDir", `{"path":"/workspace/d"}`); r.status != 200 || !bytes.Contains(r.body, []byte(`"FILE_TYPE_DIRECTORY"`)) {
		t.Errorf("MakeDir: %d %s", r.status, r.body)
	}
	if r := call("/filesystem.Filesystem/MakeDir", `{"path":"d"}`); r.status != http.StatusConflict || !bytes.Contains(r.body, []byte(`"already_exists"`)) {
		t.Errorf("MakeDir again: %d %s", r.status, r.body)
	}
	for _, p := range []string{"/etc/passwd", "/workspace/../etc/passwd", "../x"} {
		if r := call("/filesystem.Filesystem/Stat", `{"path":"`+p+`"}`); r.status != http.StatusBadRequest || !bytes.Contains(r.body, []byte("outside /workspace")) {
			t.Errorf("Stat %s: %d %s", p, r.status, r.body)
		}
	}
	if r := call("/filesystem.Filesystem/Stat", `{"path":"nope"}`); r.status != http.StatusNotFound {
		t.Errorf("Stat of a missing file: %d %s", r.status, r.body)
	}
	if r := call("/filesystem.Filesystem/CreateWatcher", `{"path":"d"}`); r.status != http.StatusNotImplemented || !bytes.Contains(r.body, []byte("unimplemented")) {
		t.Errorf("an unserved RPC: %d %s", r.status, r.body)
	}
	if r := call("/process.Process/SendSignal", `{"process":{"pid":999999},"signal":"SIGNAL_SIGKILL"}`); r.status != http.StatusNotFound {
		t.Errorf("SendSignal to no process: %d %s", r.status, r.body)
	}
	if r := call("/process.Process/SendSignal", `{"process":{"pid":1},"signal":"SIGNAL_SIGHUP"}`); r.status != http.StatusBadRequest {
		t.Errorf("an unknown signal: %d %s", r.status, r.body)
	}
	r, _ := http.NewRequest("POST", ts.URL+"/process.Process/List", strings.NewReader("\x00"))
	for k, v := range envdHeaders(c) {
		r.Header.Set(k, v)
	}
	r.Header.Set("Content-Type", "application/proto")
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || !bytes.Contains(b, []byte("JSON codec only")) {
		t.Errorf("the binary codec: %d %s", res.StatusCode, b)
	}
}

// scriptProc is a Proc whose output is given chunk by chunk.
type scriptProc struct {
	Proc
	chunks [][2]string
}

func (p scriptProc) Follow(ctx context.Context, _, _ int64, fn func(string, []byte) error) error {
	for _, c := range p.chunks {
		if err := fn(c[0], []byte(c[1])); err != nil {
			return err
		}
	}
	return nil
}

func (p scriptProc) Signal(syscall.Signal) error { return nil }

// The driver's output: framed messages split anywhere, unframed text
// around them, a UTF-8 character split across chunks.
func TestInterpreterDemux(t *testing.T) {
	c := &codeContext{}
	var got []string
	c.sink = func(m map[string]any) { b, _ := json.Marshal(m); got = append(got, string(b)) }
	dead := make(chan struct{})
	euro := "€"
	c.read(scriptProc{chunks: [][2]string{
		{"stdout", "raw \x1e{\"type\":\"std"},
		{"stdout", "out\",\"text\":\"a\"}\n" + euro[:1]},
		{"stderr", "warn"},
		{"stdout", euro[1:] + "\x1e{\"type\":\"end_of_execution\"}\n"},
	}}, dead)
	want := []string{`{"text":"raw ","type":"stdout"}`, `{"text":"a","type":"stdout"}`, `{"text":"warn","type":"stderr"}`, `{"text":"€","type":"stdout"}`, `{"type":"end_of_execution"}`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	select {
	case <-dead:
	default:
		t.Error("dead not closed once the output ended")
	}
}

func TestDiffTrees(t *testing.T) {
	t0 := time.Unix(1, 0)
	a := map[string]FileInfo{"x": {Size: 1, ModTime: t0}, "y": {Size: 1, ModTime: t0}, "z": {Size: 1, ModTime: t0, Mode: 0o644}}
	b := map[string]FileInfo{"x": {Size: 2, ModTime: t0}, "w": {Size: 1, ModTime: t0}, "z": {Size: 1, ModTime: t0, Mode: 0o600}}
	var got []string
	for _, e := range diffTrees(a, b) {
		got = append(got, e.kind+":"+e.path)
	}
	want := "EVENT_TYPE_REMOVE:y EVENT_TYPE_CREATE:w EVENT_TYPE_WRITE:x EVENT_TYPE_CHMOD:z"
	if strings.Join(got, " ") != want {
		t.Errorf("%v, want %s", got, want)
	}
}

func TestIsDataPlane(t *testing.T) {
	for host, want := range map[string]bool{"8080-0123456789abcdef.localhost:3000": true, "49983-0123456789abcdef.e2b.example": true,
		"localhost:3000": false, "127.0.0.1": false, "api.e2b.app": false, "8080-x.localhost": false} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		if got := IsDataPlane(r); got != want {
			t.Errorf("%s: %v, want %v", host, got, want)
		}
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("E2b-Sandbox-Id", "x")
	if !IsDataPlane(r) {
		t.Error("E2b-Sandbox-Id not the data plane")
	}
}
