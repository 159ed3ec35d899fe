package server

import (
	"context"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/policy"
)

// langInfo is an installed language with its version.
type langInfo struct {
	Name    string   `json:"name"`
	Aliases []string `json:"aliases,omitempty"`
	Version string   `json:"version"`
}

// versionCode prints each language's version from inside a sandbox.
var versionCode = map[string]string{
	"python": "import platform; print(platform.python_version())",
	"node":   "console.log(process.versions.node)",
	"bash":   `echo "$BASH_VERSION"`,
	"ruby":   "puts RUBY_VERSION",
	"perl":   `printf "%vd\n", $^V`,
	"php":    "<?php echo PHP_VERSION, \"\\n\";",
	"lua":    "print(_VERSION)",
}

var versionRE = regexp.MustCompile(`\d+(\.\d+){0,2}`)

// detectVersions asks each installed language its version, once, in a
// sandbox under the served policy. A language that cannot say is
// "0.0.0"; sh (POSIX sh has no version) likewise.
func (s *Server) detectVersions() []langInfo {
	var out []langInfo
	for _, l := range s.ex.Languages() {
		li := langInfo{Name: l.Name, Aliases: l.Aliases, Version: "0.0.0"}
		if code, ok := versionCode[l.Name]; ok {
			p := s.pol
			p.Timeout = policy.Duration(min(10*time.Second, time.Duration(p.Timeout)))
			ctx, cancel := context.WithTimeout(s.kill, 15*time.Second)
			res, err := s.ex.Execute(ctx, executor.Request{Language: l.Name, Code: code, Policy: p})
			cancel()
			if err == nil && res.Status == "ok" {
				if v := versionRE.FindString(res.Stdout); v != "" {
					for strings.Count(v, ".") < 2 {
						v += ".0"
					}
					li.Version = v
				}
			} else {
				s.log.Warn("language version", "language", l.Name, "error", err)
			}
		}
		out = append(out, li)
	}
	return out
}

func (s *Server) languageNames() []string {
	var out []string
	for _, l := range s.ex.Languages() {
		out = append(out, l.Name)
	}
	return out
}

// Limits are the served policy's limits: each request's defaults and
// maximums.
type Limits struct {
	Timeout   policy.Duration `json:"timeout"`
	CPUTime   policy.Duration `json:"cpu_time,omitempty"`
	Memory    int64           `json:"memory"`
	Pids      int64           `json:"pids"`
	CPUs      float64         `json:"cpus,omitempty"`
	FileSize  policy.Size     `json:"file_size"`
	OpenFiles int             `json:"open_files"`
	MaxOutput policy.Size     `json:"max_output"`
	Net       policy.Net      `json:"net"`
}

// Capabilities is GET /v1/capabilities.
type Capabilities struct {
	Host      executor.Capabilities `json:"host"`
	Languages []langInfo            `json:"languages"`
	Limits    Limits                `json:"limits"`
	Server    ServerLimits          `json:"server"`
	// Sandboxes: the live sandboxes' limits and routes (sandbox.go).
	Sandboxes SandboxLimits `json:"sandboxes"`
}

// ServerLimits are the server's own bounds.
type ServerLimits struct {
	MaxConcurrent int   `json:"max_concurrent"`
	MaxQueue      int   `json:"max_queue"`
	MaxRequest    int64 `json:"max_request"`
	MaxSessions   int   `json:"max_sessions"`
	// The per-credential caps (docs/serve.md, "Tenants").
	TenantMaxSessions   int             `json:"tenant_max_sessions"`
	TenantMaxConcurrent int             `json:"tenant_max_concurrent"`
	SessionIdle         policy.Duration `json:"session_idle"`
	PoolReady           int             `json:"pool_ready"`
}

func (s *Server) handleCapabilities(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.Capabilities())
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if s.Draining() {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}
