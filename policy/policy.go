package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path"
	"reflect"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Net is the network mode of a sandbox.
type Net string

const (
	// NetNone gives the sandbox a network namespace of its own holding only
	// the loopback interface, brought up. Nothing outside is reachable.
	NetNone Net = "none"
	// NetLoopback is NetNone under the name bwrap and nsjail users expect:
	// a private namespace with lo up and nothing else.
	NetLoopback Net = "loopback"
	// NetHost shares the host's network namespace. Only by explicit request.
	NetHost Net = "host"
)

// MountType is the kind of a user mount.
type MountType string

const (
	MountROBind MountType = "ro-bind" // read-only bind of a host path, recursive
	MountBind   MountType = "bind"    // writable bind of a host path
	MountTmpfs  MountType = "tmpfs"   // a fresh tmpfs
)

// Mount is one mount the policy adds to the default filesystem.
type Mount struct {
	Type   MountType `json:"type"`
	Source string    `json:"source,omitempty"` // host path (binds)
	Target string    `json:"target"`           // absolute path inside the sandbox
	Size   Size      `json:"size,omitempty"`   // tmpfs size; 0 = the default
}

// Policy is what a sandbox is allowed to do. The zero value of every field
// means "the default" (see Default); use Default() and change fields, or
// Parse a JSON document, then Validate.
type Policy struct {
	// Timeout is the wall-clock limit. 0 = 30s.
	Timeout Duration `json:"timeout,omitempty"`
	// CPUTime is a CPU-time budget for the whole run: the program and
	// everything it starts, not the sandbox's own setup. 0 = none.
	CPUTime Duration `json:"cpu_time,omitempty"`
	// KillGrace is how long the program has to end after the CLI passed
	// on a SIGINT or SIGTERM it received, before the sandbox is killed.
	// 0 = 2s. (Library callers end a run with its context.)
	KillGrace Duration `json:"kill_grace,omitempty"`
	// Memory is the memory limit in bytes. 0 = the default, 512 MiB,
	// applied by a cgroup where the host allows it and by rlimits
	// otherwise; an explicit value needs a cgroup unless BestEffort.
	Memory Size `json:"memory,omitempty"`
	// Pids is the maximum number of tasks. 0 = the default, 256, applied
	// like the default Memory; an explicit value needs a cgroup unless
	// BestEffort.
	Pids int `json:"pids,omitempty"`
	// CPUs is a CPU rate limit in cores (0.5 = half a core). 0 = none.
	CPUs float64 `json:"cpus,omitempty"`
	// FileSize caps the size of any file the program writes. 0 = 1 GiB.
	FileSize Size `json:"file_size,omitempty"`
	// OpenFiles caps open file descriptors per process. 0 = 1024.
	OpenFiles int `json:"open_files,omitempty"`
	// Net is the network mode. "" = the default: none (a network
	// namespace of its own) where the backend can give one. Unset and
	// "none" differ only on the process backend, which has no network
	// namespace: there Landlock (ABI 4) denies TCP bind and connect for
	// both (UDP stays reachable, reported in the result's not_enforced);
	// on a kernel without Landlock network rules "" runs on the host's
	// network, reported, while an explicit "none" is a demand, refused
	// unless BestEffort (then reported). "loopback" is refused there. A
	// caller that must not run on the host's network says so: net none.
	// Validate keeps "" as it is; Network returns the mode in force.
	Net Net `json:"net,omitempty"`
	// Egress is the allow-list of net allow (NetAllow); in a policy
	// document it is net's object form: net: {"allow": [...]}.
	Egress Egress `json:"-"`
	// Mounts are added, in order, after the default filesystem.
	Mounts []Mount `json:"mounts,omitempty"`
	// Workspace is a host directory bound writable at /workspace. "" = a
	// fresh tmpfs.
	Workspace string `json:"workspace,omitempty"`
	// Chdir is the working directory inside. "" = /workspace.
	Chdir string `json:"chdir,omitempty"`
	// UID and GID are the program's ids inside the sandbox, the one id
	// of each its user namespace maps (to the caller's ids rootless, to
	// an unprivileged host id under root). nil = 1000, named "sandbox" in
	// /etc/passwd and /etc/group; 0 looks like root (with no capability).
	// 0 to 65533. The namespaces backend only.
	UID *int `json:"uid,omitempty"`
	GID *int `json:"gid,omitempty"`
	// Setenv sets variables in the sandbox's otherwise empty environment.
	Setenv map[string]string `json:"setenv,omitempty"`
	// EnvPass names variables copied from the caller's environment.
	EnvPass []string `json:"env_pass,omitempty"`
	// MaxOutput caps each captured stream (stdout, stderr). 0 = 1 MiB.
	MaxOutput Size `json:"max_output,omitempty"`
	// WorkspaceSize bounds a tmpfs /workspace (no Workspace: a live
	// sandbox's, a session's, a run's own): past it a write fails with
	// ENOSPC. Its pages count against Memory too. 0 = the memory limit.
	WorkspaceSize Size `json:"workspace_size,omitempty"`
	// Backend is "namespaces" (the default: the jail) or "process": no
	// namespaces, only rlimits, no_new_privs, the seccomp filter, an
	// unprivileged uid, the process-group kill and, where the kernel has
	// Landlock, its filesystem, TCP, abstract socket and signal isolation
	// (docs/security.md has the table). The process backend is used only when chosen
	// here, or as the fallback of a best_effort policy on a host without
	// user namespaces; results say which ran.
	Backend string `json:"backend,omitempty"`
	// Seccomp is the syscall filter. Zero value = the default profile.
	Seccomp Seccomp `json:"seccomp,omitempty"`
	// BestEffort names the controls a run may degrade when the host (or
	// the backend) cannot enforce them: DegradeLimits (best_effort: true,
	// --best-effort) for limits alone, each other control by its own name
	// (see Degrade). What was not enforced is always reported.
	BestEffort Degrade `json:"best_effort,omitempty"`
}

// Defaults.
const (
	DefaultTimeout   = 30 * time.Second
	DefaultMemory    = 512 << 20
	DefaultPids      = 256
	DefaultFileSize  = 1 << 30
	DefaultOpenFiles = 1024
	DefaultMaxOutput = 1 << 20
	DefaultKillGrace = 2 * time.Second
)

// DefaultInsideID is the program's uid and gid inside by default, and
// MaxInsideID the highest one a policy may choose (65534 is the overflow
// id, nobody, that unmapped ids show as).
const (
	DefaultInsideID = 1000
	MaxInsideID     = 65533
)

// InsideIDs returns the program's uid and gid inside the sandbox.
func (p *Policy) InsideIDs() (uid, gid int) {
	uid, gid = DefaultInsideID, DefaultInsideID
	if p.UID != nil {
		uid = *p.UID
	}
	if p.GID != nil {
		gid = *p.GID
	}
	return uid, gid
}

// MemoryLimit is the memory limit in force: Memory, or the default.
func (p *Policy) MemoryLimit() int64 {
	if p.Memory > 0 {
		return int64(p.Memory)
	}
	return DefaultMemory
}

// PidsLimit is the task limit in force: Pids, or the default.
func (p *Policy) PidsLimit() int64 {
	if p.Pids > 0 {
		return int64(p.Pids)
	}
	return DefaultPids
}

// Network is the network mode in force for the jail: Net, or NetNone.
func (p *Policy) Network() Net {
	if p.Net == "" {
		return NetNone
	}
	return p.Net
}

// Default returns the default policy with every default filled in.
func Default() Policy {
	p := Policy{}
	p.fill()
	return p
}

// Preset returns a named preset. Only "default" exists so far.
func Preset(name string) (Policy, error) {
	switch name {
	case "", "default":
		return Default(), nil
	}
	return Policy{}, Invalid("preset", "unknown preset %q (known: default)", name)
}

// fill replaces zero values with the defaults.
func (p *Policy) fill() {
	if p.Timeout == 0 {
		p.Timeout = Duration(DefaultTimeout)
	}
	if p.FileSize == 0 {
		p.FileSize = DefaultFileSize
	}
	if p.OpenFiles == 0 {
		p.OpenFiles = DefaultOpenFiles
	}
	if p.MaxOutput == 0 {
		p.MaxOutput = DefaultMaxOutput
	}
	if p.KillGrace == 0 {
		p.KillGrace = Duration(DefaultKillGrace)
	}
	if p.Chdir == "" {
		p.Chdir = "/workspace"
	}
	if p.Seccomp.Profile == "" {
		p.Seccomp.Profile = "default"
	}
}

// Parse reads a policy document, JSON or YAML (a document whose first
// character is "{" is JSON; anything else is read as YAML, converted to
// JSON with duplicate keys refused, then decoded the same way). Unknown
// fields are an error; missing fields take their defaults. The result is
// validated. Errors name the field, or the line and column of a JSON
// syntax error, never Go's type names.
func Parse(data []byte) (Policy, error) {
	doc := bytes.TrimLeft(data, " \t\r\n")
	isJSON := len(doc) > 0 && doc[0] == '{'
	if len(doc) == 0 {
		return Policy{}, Invalid("policy", "the document is empty; {} is the default policy")
	}
	if !isJSON {
		j, err := yaml.YAMLToJSONStrict(data)
		if err != nil {
			return Policy{}, Invalid("policy", "YAML: %s", strings.TrimPrefix(err.Error(), "error converting YAML to JSON: "))
		}
		if !bytes.HasPrefix(j, []byte("{")) {
			return Policy{}, Invalid("policy", "a policy is a mapping of fields (e.g. \"timeout: 10s\"), not %s", j)
		}
		data = j
	}
	var p Policy
	j := p.jsonForm()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(j); err != nil {
		return Policy{}, decodeError(data, isJSON, err)
	}
	p.fromJSON(j)
	if dec.More() {
		return Policy{}, Invalid("policy", "trailing data after the JSON object")
	}
	if err := explicitZero(data, &p); err != nil {
		return Policy{}, err
	}
	if err := p.Validate(); err != nil {
		return Policy{}, err
	}
	return p, nil
}

// explicitZero refuses a limit written as zero: zero is never a silent
// default. A field left out takes the default; one written 0 ("0s",
// "0MiB") is a mistake or a belief that 0 means "unlimited", and either
// way it must not quietly become 512 MiB.
func explicitZero(data []byte, p *Policy) error {
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return nil
	}
	for _, z := range []struct {
		name string
		zero bool
		def  string
	}{
		{"timeout", p.Timeout == 0, "30s"},
		{"cpu_time", p.CPUTime == 0, "no CPU-time limit"},
		{"kill_grace", p.KillGrace == 0, "2s"},
		{"memory", p.Memory == 0, "512MiB"},
		{"pids", p.Pids == 0, "256"},
		{"cpus", p.CPUs == 0, "no CPU rate limit"},
		{"file_size", p.FileSize == 0, "1GiB"},
		{"open_files", p.OpenFiles == 0, "1024"},
		{"max_output", p.MaxOutput == 0, "1MiB"},
	} {
		if _, ok := fields[z.name]; ok && z.zero {
			return Invalid(z.name, "0 is not a limit: leave %s out for the default (%s)", z.name, z.def)
		}
	}
	return nil
}

// decodeError says what is wrong with a policy document in a person's
// terms: the field and the kind of value it takes, or where a JSON
// document stops making sense (line and column, 1-based; positions in a
// YAML document's JSON conversion would mislead, so they are left out).
func decodeError(data []byte, isJSON bool, err error) error {
	at := func(off int64) string {
		if !isJSON {
			return ""
		}
		line, col := 1, 1
		for _, c := range data[:min(int(off), len(data))] {
			if col++; c == '\n' {
				line, col = line+1, 1
			}
		}
		return fmt.Sprintf(" at line %d, column %d", line, col)
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var inv *InvalidError
	switch {
	case errors.As(err, &inv):
		return inv // a value's own decoder named its field (net)
	case errors.As(err, &syn):
		return Invalid("policy", "JSON syntax error%s: %s", at(syn.Offset), strings.TrimPrefix(syn.Error(), "json: "))
	case errors.As(err, &typ):
		// Fields decode through policyJSON's embedded policyFields.
		field := strings.TrimPrefix(typ.Field, "policyFields.")
		if field == "" {
			field = "policy"
		}
		pos := ""
		if typ.Offset > 0 { // a value's own decoder (Duration, Size) gives none
			pos = at(typ.Offset)
		}
		return Invalid(field, "%s cannot be %s%s", article(typ.Value), kindOf(typ.Type), pos)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Invalid("policy", "the document ends before its object closes%s", at(int64(len(data))))
	}
	return Invalid(failingField(data), "%s", strings.TrimPrefix(err.Error(), "json: "))
}

// failingField finds the top-level field whose value a decoding error
// came from (json reports a value's own UnmarshalJSON error, a Size's or
// a Duration's, without its field): each field is decoded alone.
func failingField(data []byte) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(data, &fields) != nil {
		return "policy"
	}
	t := reflect.TypeFor[Policy]()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		raw, ok := fields[name]
		typ := t.Field(i).Type
		if name == "net" {
			typ = reflect.TypeFor[netJSON]()
		}
		if ok && json.Unmarshal(raw, reflect.New(typ).Interface()) != nil {
			return name
		}
	}
	return "policy"
}

// article puts "a" or "an" before a JSON value's kind ("an array").
func article(kind string) string {
	if kind != "" && strings.ContainsRune("aeiou", rune(kind[0])) {
		return "an " + kind
	}
	return "a " + kind
}

// kindOf names the kind of value a policy field takes.
func kindOf(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[Duration]():
		return "a duration (\"30s\", or a number of seconds)"
	case reflect.TypeFor[Size]():
		return "a size (\"64MiB\", or a number of bytes)"
	case reflect.TypeFor[Degrade]():
		return "true or false, or a list of the controls it may degrade (" + strings.Join(degradeNames[:], ", ") + ")"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.Kind().String()
}

// Validate fills in defaults and checks every field. Errors match ErrInvalid.
func (p *Policy) Validate() error {
	p.fill()
	switch {
	case p.Timeout < 0:
		return Invalid("timeout", "must be positive")
	case p.CPUTime < 0:
		return Invalid("cpu_time", "must not be negative")
	case p.KillGrace < 0:
		return Invalid("kill_grace", "must not be negative")
	case p.Memory != 0 && p.Memory < 1<<20:
		return Invalid("memory", "%d bytes is below the 1 MiB minimum", p.Memory)
	case p.Pids < 0:
		return Invalid("pids", "must be at least 1")
	case p.CPUs < 0 || math.IsNaN(p.CPUs) || math.IsInf(p.CPUs, 0):
		return Invalid("cpus", "must be a positive number of cores")
	case p.FileSize < 0:
		return Invalid("file_size", "must not be negative")
	case p.OpenFiles < 16:
		return Invalid("open_files", "must be at least 16")
	case p.MaxOutput < 0:
		return Invalid("max_output", "must not be negative")
	case p.WorkspaceSize < 0 || p.WorkspaceSize != 0 && p.Workspace != "":
		return Invalid("workspace_size", "must not be negative, and bounds a tmpfs workspace only (not a host --workspace)")
	case p.UID != nil && (*p.UID < 0 || *p.UID > MaxInsideID):
		return Invalid("uid", "%d is not an id from 0 to %d", *p.UID, MaxInsideID)
	case p.GID != nil && (*p.GID < 0 || *p.GID > MaxInsideID):
		return Invalid("gid", "%d is not an id from 0 to %d", *p.GID, MaxInsideID)
	}
	switch p.Backend {
	case "", "namespaces", "process":
	default:
		return Invalid("backend", "%q is not one of namespaces, process", p.Backend)
	}
	switch p.Net {
	case "", NetNone, NetLoopback, NetHost:
		if !p.Egress.empty() {
			return Invalid("net", "allow and deny rules go with net allow, not net %s", p.Network())
		}
	case NetAllow:
		if err := p.Egress.validate(); err != nil {
			return err
		}
	default:
		return Invalid("net", "%q is not one of none, loopback, host, allow", p.Net)
	}
	if err := checkSandboxPath("chdir", p.Chdir); err != nil {
		return err
	}
	if p.Workspace != "" && !path.IsAbs(p.Workspace) {
		return Invalid("workspace", "%q must be an absolute host path", p.Workspace)
	}
	for i, m := range p.Mounts {
		if err := m.validate(); err != nil {
			return fmt.Errorf("mounts[%d]: %w", i, err)
		}
	}
	if err := p.Seccomp.Validate(); err != nil {
		return err
	}
	for k := range p.Setenv {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return Invalid("setenv", "bad variable name %q", k)
		}
	}
	for _, k := range p.EnvPass {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return Invalid("env_pass", "bad variable name %q", k)
		}
	}
	return nil
}

func (m Mount) validate() error {
	switch m.Type {
	case MountROBind, MountBind:
		if !path.IsAbs(m.Source) {
			return Invalid("mount source", "%q must be an absolute host path", m.Source)
		}
	case MountTmpfs:
		if m.Source != "" {
			return Invalid("mount source", "a tmpfs has no source")
		}
	default:
		return Invalid("mount type", "%q is not one of ro-bind, bind, tmpfs", m.Type)
	}
	if m.Size < 0 {
		return Invalid("mount size", "must not be negative")
	}
	if err := checkSandboxPath("mount target", m.Target); err != nil {
		return err
	}
	// The sandbox's own /proc and /dev are built by airlock; mounting over
	// them (or over the root) would undo their masking.
	t := path.Clean(m.Target)
	for _, reserved := range []string{"/", "/proc", "/dev"} {
		if t == reserved || (reserved != "/" && strings.HasPrefix(t, reserved+"/")) {
			return Invalid("mount target", "%q is reserved", m.Target)
		}
	}
	return nil
}

// checkSandboxPath requires an absolute, clean path without "..".
func checkSandboxPath(field, p string) error {
	if !path.IsAbs(p) || path.Clean(p) != p || strings.Contains(p, "\x00") {
		return Invalid(field, "%q must be an absolute, clean path", p)
	}
	return nil
}

// Duration is a time.Duration that reads and writes as "30s" in JSON
// (numbers are taken as seconds).
type Duration time.Duration

// MarshalJSON writes the duration as a string like "1m30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON accepts "1m30s" or a number of seconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return typeError(b, reflect.TypeFor[Duration]())
	}
	*d = Duration(f * float64(time.Second))
	return nil
}

// typeError is a JSON value b of the wrong kind for t, as encoding/json
// reports one: a decoder above it adds the field's path (a server
// request's "policy.timeout"), which an error of another type would lose.
func typeError(b []byte, t reflect.Type) error {
	kind := "value"
	switch t := bytes.TrimSpace(b); {
	case len(t) == 0:
	case t[0] == '{':
		kind = "object"
	case t[0] == '[':
		kind = "array"
	case t[0] == 't' || t[0] == 'f':
		kind = "bool"
	case t[0] == 'n':
		kind = "null"
	case t[0] == '"':
		kind = "string"
	default:
		kind = "number " + string(t[:min(len(t), 32)])
	}
	return &json.UnmarshalTypeError{Value: kind, Type: t}
}

// Size is a byte count that reads "64MiB", "1G", "4096" or a JSON number.
type Size int64

// ParseSize parses a byte count with an optional binary suffix: K, KB,
// KiB, M, MB, MiB, G, GB, GiB, T, TB, TiB (all powers of 1024).
func ParseSize(s string) (Size, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	up := strings.ToUpper(t)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"TB", 1 << 40},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1}} {
		if strings.HasSuffix(up, u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64/mult {
		return 0, fmt.Errorf("size %q: want a number with an optional K/M/G/T suffix", s)
	}
	return Size(n * mult), nil
}

// UnmarshalJSON accepts a number of bytes or a string for ParseSize.
func (s *Size) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		v, err := ParseSize(str)
		*s = v
		return err
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return typeError(b, reflect.TypeFor[Size]())
	}
	*s = Size(n)
	return nil
}
