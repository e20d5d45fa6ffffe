package stack

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/observability"
)

// The metrics contract (issue 33): a stack with its dashboard and alerts
// on, rendered at every supported release of vLLM, the router and both
// pickers, names in every panel query and alert expression only metrics
// that the release behind the selected Services exports, by the facts of
// testdata/upstream/metrics.tsv, read here: the names are parsed out of
// the dashboard JSON and the PrometheusRule the stack composes.

// metricFact is a row of metrics.tsv.
type metricFact struct {
	program, name, kind, engine string
	first, last                 upVersion
}

func loadMetricFacts(t *testing.T) []metricFact {
	t.Helper()
	rows, err := stacktest.ReadTSV(filepath.Join(stacktest.UpstreamDir, "metrics.tsv"), 8)
	if err != nil {
		t.Fatal(err)
	}
	var out []metricFact
	for _, r := range rows {
		first, err1 := parseUpVersion(r[5])
		last, err2 := parseUpVersion(r[6])
		if err1 != nil || err2 != nil {
			t.Fatalf("metrics.tsv: %v: bad release", r)
		}
		out = append(out, metricFact{program: r[0], name: r[1], kind: r[2], engine: r[4], first: first, last: last})
	}
	return out
}

// exportedAt reports whether program's release v exports the series name.
// Up to vLLM 0.10.2 an engine may run the V0 engine, which exports no row
// marked v1 only.
func exportedAt(facts []metricFact, program string, v upVersion, name string) bool {
	oldest, _ := parseUpVersion("0.0.0")
	v0Last, _ := parseUpVersion("0.10.2")
	for _, f := range facts {
		if f.program != program || !v.in(f.first, f.last) {
			continue
		}
		if program == observability.VLLM && f.engine != "v0+v1" && v.in(oldest, v0Last) {
			continue
		}
		if name == f.name || f.kind == "histogram" && (name == f.name+"_bucket" || name == f.name+"_sum" || name == f.name+"_count") {
			return true
		}
	}
	return false
}

// serviceMatcher is the service matcher of a selector the queries write.
var serviceMatcher = regexp.MustCompile(`service=~?"([^"]*)"`)

// observedExprs are the expressions of a rendered stack's dashboard and
// alerts.
func observedExprs(t *testing.T, rsp response) []string {
	t.Helper()
	var out []string
	cm, ok := rsp.objects[names.DashboardKey].(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("no dashboard ConfigMap; have %v", keys(rsp))
	}
	for _, js := range cm.Data {
		var d struct {
			Panels []struct{ Targets []struct{ Expr string } }
		}
		if err := json.Unmarshal([]byte(js), &d); err != nil {
			t.Fatalf("dashboard: %v", err)
		}
		for _, p := range d.Panels {
			for _, q := range p.Targets {
				out = append(out, q.Expr)
			}
		}
	}
	rule, ok := rsp.objects[names.PrometheusRuleKey].(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("no PrometheusRule; have %v", keys(rsp))
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			out = append(out, r.(map[string]any)["expr"].(string))
		}
	}
	return out
}

// observedOn turns the dashboard and alerts on.
var observedOn = map[string]any{"serviceMonitor": map[string]any{}, "dashboard": map[string]any{}, "alerts": map[string]any{}}

// checkMetrics checks every expression of a rendered stack: each selects
// some of its Services, all run by one program, whose release exports each
// metric name the expression holds.
func checkMetrics(t *testing.T, facts []metricFact, what string, rsp response, programOf map[string]string, releaseOf map[string]upVersion) int {
	t.Helper()
	n := 0
	for _, e := range observedExprs(t, rsp) {
		m := serviceMatcher.FindStringSubmatch(e)
		if m == nil {
			t.Errorf("%s: %q selects no Service", what, e)
			continue
		}
		progs := map[string]bool{}
		for _, svc := range strings.Split(m[1], "|") {
			p, ok := programOf[svc]
			if !ok {
				t.Errorf("%s: %q selects %s, no Service of the stack", what, e, svc)
			}
			progs[p] = true
		}
		if len(progs) != 1 {
			t.Errorf("%s: %q selects the Services of %d programs", what, e, len(progs))
			continue
		}
		var prog string
		for p := range progs {
			prog = p
		}
		names := observability.MetricNames(e)
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", what, e)
		}
		for _, name := range names {
			n++
			if !exportedAt(facts, prog, releaseOf[prog], name) {
				t.Errorf("%s: %q names %s, which %s %v does not export (metrics.tsv)", what, e, name, prog, releaseOf[prog])
			}
		}
	}
	return n
}

// TestMetricsContract renders a stack of two models with its dashboard and
// alerts on at every release the function supports and holds every metric
// name it renders to the facts.
func TestMetricsContract(t *testing.T) {
	facts := loadMetricFacts(t)
	models := []any{
		map[string]any{"name": "a", "modelURL": "org/a"},
		map[string]any{"name": "b", "modelURL": "org/b", "replicas": 0},
	}
	names := 0
	for _, vllm := range stacktest.Releases["vllm"] {
		v, _ := parseUpVersion(vllm)
		engines := map[string]string{"s-a-engine-service": "vllm", "s-b-engine-service": "vllm"}
		for _, router := range stacktest.Releases["router"] {
			r, _ := parseUpVersion(router)
			xr := with("model", nil, "models", models, "monitoring", observedOn,
				"vllmConfig.image", "vllm/vllm-openai:v"+vllm, "routerConfig.image", "lmcache/lmstack-router:v"+router)
			rsp := mustRun(t, req(t, xr, nil, nil))
			programOf := map[string]string{"s-router-service": "router"}
			for k, p := range engines {
				programOf[k] = p
			}
			names += checkMetrics(t, facts, fmt.Sprintf("vLLM %s, router %s", vllm, router), rsp, programOf, map[string]upVersion{"vllm": v, "router": r})
		}
		for repo, kind := range map[string]string{"registry.k8s.io/gateway-api-inference-extension/epp": "gaie", "ghcr.io/llm-d/llm-d-router-endpoint-picker": "llm-d"} {
			for _, picker := range stacktest.Releases[kind] {
				p, _ := parseUpVersion(picker)
				xr := gieXR("model", nil, "models", models, "monitoring", observedOn,
					"vllmConfig.image", "vllm/vllm-openai:v"+vllm, "inferenceExtension.picker.image", repo+":v"+picker)
				rsp := mustRun(t, req(t, xr, nil, nil))
				programOf := map[string]string{"s-a-epp": kind, "s-b-epp": kind}
				for k, p := range engines {
					programOf[k] = p
				}
				names += checkMetrics(t, facts, fmt.Sprintf("vLLM %s, %s %s", vllm, kind, picker), rsp, programOf, map[string]upVersion{"vllm": v, kind: p})
			}
		}
	}
	if names == 0 {
		t.Fatal("no metric name checked")
	}
}
