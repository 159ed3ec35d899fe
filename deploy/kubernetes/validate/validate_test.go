// Package validate checks deploy/kubernetes against the Kubernetes API
// types (k8s.io/api, strict: an unknown or misspelt field fails) and
// against airlock itself (flags, the metric the autoscaler reads). A
// module of its own, so that the main module does not depend on k8s.io.
package validate

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/yaml"
)

// decode strictly decodes every document of file by its kind.
func decode(t *testing.T, file string) []any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []any
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		var meta struct{ APIVersion, Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var obj any
		switch meta.APIVersion + " " + meta.Kind {
		case "apps/v1 Deployment":
			obj = &appsv1.Deployment{}
		case "v1 Service":
			obj = &corev1.Service{}
		case "networking.k8s.io/v1 NetworkPolicy":
			obj = &networkingv1.NetworkPolicy{}
		case "autoscaling/v2 HorizontalPodAutoscaler":
			obj = &autoscalingv2.HorizontalPodAutoscaler{}
		case "kustomize.config.k8s.io/v1beta1 Kustomization":
			continue
		default:
			t.Fatalf("%s: unexpected %s %s", file, meta.APIVersion, meta.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s: %s: %v", file, meta.Kind, err)
		}
		out = append(out, obj)
	}
	return out
}

func TestManifests(t *testing.T) {
	files, _ := filepath.Glob("../*.yaml")
	if len(files) < 5 {
		t.Fatalf("manifests: %v", files)
	}
	src := func(rel string) string {
		b, err := os.ReadFile(filepath.Join("../../..", rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	flags := src("cmd/airlock/daemonflags.go") + src("cmd/airlock/run.go")
	metrics := src("server/metrics.go")
	seen := map[string]bool{}
	for _, f := range files {
		for _, obj := range decode(t, f) {
			switch o := obj.(type) {
			case *appsv1.Deployment:
				seen[filepath.Base(f)] = true
				c := o.Spec.Template.Spec.Containers[0]
				if c.Args[0] != "serve" {
					t.Errorf("%s: args %v", f, c.Args)
				}
				for _, a := range c.Args[1:] {
					name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
					if !regexp.MustCompile(`"` + regexp.QuoteMeta(name) + `"`).MatchString(flags) {
						t.Errorf("%s: airlock serve has no flag --%s", f, name)
					}
				}
				if filepath.Base(f) == "deployment.yaml" {
					sc := c.SecurityContext
					if sc == nil || sc.ProcMount == nil || *sc.ProcMount != corev1.UnmaskedProcMount ||
						sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeUnconfined ||
						sc.AppArmorProfile == nil || sc.AppArmorProfile.Type != corev1.AppArmorProfileTypeUnconfined ||
						o.Spec.Template.Spec.HostUsers == nil || *o.Spec.Template.Spec.HostUsers ||
						sc.Privileged != nil && *sc.Privileged {
						t.Errorf("%s: the pod settings user namespaces need (docs/kubernetes.md) are missing", f)
					}
					if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/healthz" {
						t.Errorf("%s: readiness probe", f)
					}
				}
			case *autoscalingv2.HorizontalPodAutoscaler:
				for _, m := range o.Spec.Metrics {
					if m.Pods != nil && !strings.Contains(metrics, `"`+m.Pods.Metric.Name+`"`) {
						t.Errorf("%s: the server exports no metric %s", f, m.Pods.Metric.Name)
					}
				}
				seen["hpa"] = true
			case *networkingv1.NetworkPolicy:
				seen["netpol"] = true
			case *corev1.Service:
				seen["service"] = true
			}
		}
	}
	for _, k := range []string{"deployment.yaml", "process-backend.yaml", "hpa", "netpol", "service"} {
		if !seen[k] {
			t.Errorf("no %s", k)
		}
	}
}
