// Package promql checks the queries of the stack's dashboard and alerts
// (stack/observability) with Prometheus's own PromQL parser: every
// expression parses, and the metric names observability.MetricNames finds
// in it, which the metrics contract holds to the facts, are exactly the
// vector selectors Prometheus sees. And it has Prometheus evaluate what the
// function renders (eval_test.go, cases_test.go): the PrometheusRule's
// alerts and every KEDA trigger's query, over series generated as each
// release exports them (world_test.go). Its own module, so that the
// function does not depend on github.com/prometheus/prometheus.
package promql

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/observability"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// exprs are the expressions of the dashboard and alerts of a stack of two
// engines on vLLM v (one always serving) and one on the newest vLLM,
// behind the router or pickers at other.
func exprs(t *testing.T, v upstream.Version, other observability.Release) []string {
	t.Helper()
	tg := observability.Target{
		Namespace: "ns", Name: "s",
		Engines: []observability.Source{
			{Service: "s-a-engine-service", Release: observability.Release{Program: observability.VLLM, Version: v}, Model: "a"},
			{Service: "s-b-engine-service", Release: observability.Release{Program: observability.VLLM, Version: upstream.VLLMNewest}, Model: "b"},
		},
		NoEngineAlert: []string{"s-a-engine-service"},
	}
	if other.Program == observability.Router {
		tg.Router = &observability.Source{Service: "s-router-service", Release: other}
	} else {
		tg.Pickers = []observability.Source{{Service: "s-a-epp", Release: other, Model: "a"}, {Service: "s-b-epp", Release: other, Model: "b"}}
	}
	var d struct {
		Panels []struct{ Targets []struct{ Expr string } }
	}
	if err := json.Unmarshal(observability.DashboardJSON(tg), &d); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			out = append(out, q.Expr)
		}
	}
	for _, r := range observability.Rules(tg, observability.DefaultThresholds) {
		out = append(out, r.Expr)
	}
	return out
}

// TestQueriesParse: at every release the contract walks, every expression
// parses as PromQL and names the metrics MetricNames finds.
func TestQueriesParse(t *testing.T) {
	seen := map[string]bool{}
	for _, vs := range stacktest.Releases["vllm"] {
		v, _ := upstream.ParseVersion(vs)
		for _, prog := range []string{observability.Router, observability.GAIE, observability.LLMD} {
			for _, os := range stacktest.Releases[prog] {
				o, _ := upstream.ParseVersion(os)
				for _, e := range exprs(t, v, observability.Release{Program: prog, Version: o}) {
					if seen[e] {
						continue
					}
					seen[e] = true
					ex, err := parser.ParseExpr(e)
					if err != nil {
						t.Errorf("%q does not parse: %v", e, err)
						continue
					}
					var names []string
					parser.Inspect(ex, func(n parser.Node, _ []parser.Node) error {
						if vs, ok := n.(*parser.VectorSelector); ok && !slices.Contains(names, vs.Name) {
							names = append(names, vs.Name)
						}
						return nil
					})
					if got := observability.MetricNames(e); !slices.Equal(got, names) {
						t.Errorf("MetricNames(%q) = %q, Prometheus selects %q", e, got, names)
					}
				}
			}
		}
	}
	if len(seen) < 30 {
		t.Errorf("only %d distinct expressions checked", len(seen))
	}
}
