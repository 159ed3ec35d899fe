package server_test

import (
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/airlock-sandbox/airlock/executor"
	"github.com/airlock-sandbox/airlock/server"
	"sigs.k8s.io/yaml"
)

// Every route api/openapi.yaml documents is served, and every served
// route is documented.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	data, err := os.ReadFile("../api/openapi.yaml")
	if err != nil {
		// The rootless pass may not be able to read the checkout; the
		// root pass checks it.
		t.Skipf("api/openapi.yaml not readable here: %v", err)
	}
	var doc struct {
		Paths map[string]map[string]any `json:"paths"`
	}
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	ex, err := executor.New(executor.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	srv, err := server.New(server.Config{Executor: ex})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Drain(t.Context())
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			if method == "parameters" {
				continue
			}
			documented = append(documented, strings.ToUpper(method)+" "+path)
			if strings.HasPrefix(path, "/v1/run") || strings.HasPrefix(path, "/v1/exec") || strings.HasSuffix(path, "/run") || strings.HasSuffix(path, "/exec") ||
				path == "/api/v2/execute" || path == "/api/v2/runtimes" || path == "/v1/capabilities" {
				continue // these run sandboxes: served is proved by their own tests
			}
			url := strings.NewReplacer("{id}", "nosuchsession", "{path}", "a/b").Replace(path)
			w := httptest.NewRecorder()
			srv.Handler().ServeHTTP(w, httptest.NewRequest(strings.ToUpper(method), url, strings.NewReader("{}")))
			if strings.Contains(w.Body.String(), `"field":"path","message":"invalid path: `) && strings.Contains(w.Body.String(), "not a route") {
				t.Errorf("%s %s is documented but not served: %s", method, path, w.Body)
			}
		}
	}
	served := []string{"POST /v1/run", "POST /v1/exec", "POST /v1/sessions", "GET /v1/sessions", "GET /v1/sessions/{id}",
		"DELETE /v1/sessions/{id}", "POST /v1/sessions/{id}/run", "POST /v1/sessions/{id}/exec", "GET /v1/sessions/{id}/files",
		"GET /v1/sessions/{id}/files/{path}", "PUT /v1/sessions/{id}/files/{path}", "GET /v1/capabilities", "GET /healthz",
		"GET /metrics", "GET /api/v2/runtimes", "POST /api/v2/execute",
		"POST /v1/sandboxes", "GET /v1/sandboxes", "GET /v1/sandboxes/{id}", "DELETE /v1/sandboxes/{id}",
		"PATCH /v1/sandboxes/{id}/timeout", "POST /v1/sandboxes/{id}/timeout",
		"POST /v1/sandboxes/{id}/processes", "GET /v1/sandboxes/{id}/processes", "GET /v1/sandboxes/{id}/processes/{pid}",
		"GET /v1/sandboxes/{id}/processes/{pid}/output", "POST /v1/sandboxes/{id}/processes/{pid}/stdin",
		"POST /v1/sandboxes/{id}/processes/{pid}/signal", "POST /v1/sandboxes/{id}/processes/{pid}/resize",
		"GET /v1/sandboxes/{id}/processes/{pid}/pty", "GET /v1/sandboxes/{id}/files", "GET /v1/sandboxes/{id}/files/{path}",
		"PUT /v1/sandboxes/{id}/files/{path}", "DELETE /v1/sandboxes/{id}/files/{path}", "GET /v1/sandboxes/{id}/ports/{port}",
		"GET /v1/sandboxes/{id}/ports/{port}/{path}", "POST /v1/sandboxes/{id}/ports/{port}/{path}", "PUT /v1/sandboxes/{id}/ports/{port}/{path}",
		"PATCH /v1/sandboxes/{id}/ports/{port}/{path}", "DELETE /v1/sandboxes/{id}/ports/{port}/{path}"}
	for _, r := range served {
		found := false
		for _, d := range documented {
			found = found || d == r
		}
		if !found {
			t.Errorf("%s is served but not in api/openapi.yaml", r)
		}
	}
	if len(documented) != len(served) {
		t.Errorf("documented %d operations, served %d: %v", len(documented), len(served), documented)
	}
}
