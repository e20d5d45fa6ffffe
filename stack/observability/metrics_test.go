package observability

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// A metricRow is a row of metrics.tsv.
type metricRow struct {
	program, name, kind, engine string
	first, last                 upstream.Version
}

// LoadMetricFacts reads metrics.tsv.
func loadMetricFacts(t *testing.T) []metricRow {
	t.Helper()
	f, err := os.Open("../testdata/upstream/metrics.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []metricRow
	sc := bufio.NewScanner(f)
	header := true
	for sc.Scan() {
		l := sc.Text()
		if header {
			header = false
			continue
		}
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		c := strings.Split(l, "\t")
		if len(c) != 8 {
			t.Fatalf("metrics.tsv: %d columns, want 8: %q", len(c), l)
		}
		first, ok1 := upstream.ParseVersion(c[5])
		last, ok2 := upstream.ParseVersion(c[6])
		if !ok1 || !ok2 || last.Less(first) {
			t.Fatalf("metrics.tsv: bad releases %q %q in %q", c[5], c[6], l)
		}
		rows = append(rows, metricRow{program: c[0], name: c[1], kind: c[2], engine: c[4], first: first, last: last})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// vllmV0Last is the last vLLM release with the V0 engine (FACTS.md §3): up
// to it an engine may run V0, which does not export a row marked v1.
var vllmV0Last = upstream.V(0, 10, 2)

// exported reports whether release r exports the series name (a
// histogram's _bucket, _sum and _count are its row's).
func exported(rows []metricRow, r Release, name string) bool {
	for _, row := range rows {
		if row.program != r.Program || r.Version.Less(row.first) || row.last.Less(r.Version) {
			continue
		}
		if row.program == VLLM && row.engine != "v0+v1" && !vllmV0Last.Less(r.Version) {
			continue
		}
		if name == row.name {
			return true
		}
		if row.kind == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				if name == row.name+s {
					return true
				}
			}
		}
	}
	return false
}

// Releases are the releases the contract walks, by program.
var Releases = func() map[string][]upstream.Version {
	out := map[string][]upstream.Version{}
	for prog, vs := range stacktest.Releases {
		for _, v := range vs {
			ver, ok := upstream.ParseVersion(v)
			if !ok {
				panic("stacktest.Releases: " + v)
			}
			out[prog] = append(out[prog], ver)
		}
	}
	return out
}()

// TestReleasesSpanSupported: the releases the contract walks run from the
// oldest to the newest the function supports, so none is left out.
func TestReleasesSpanSupported(t *testing.T) {
	for prog, oldest := range map[string][2]upstream.Version{
		VLLM:   {upstream.VLLMOldest, upstream.VLLMNewest},
		Router: {upstream.RouterOldest, upstream.RouterNewest},
		GAIE:   {upstream.PickerOldest[GAIE], upstream.PickerNewest[GAIE]},
		LLMD:   {upstream.PickerOldest[LLMD], upstream.PickerNewest[LLMD]},
	} {
		rs := Releases[prog]
		if rs[0] != oldest[0] || rs[len(rs)-1] != oldest[1] {
			t.Errorf("%s: the contract walks %s to %s, the function supports %s to %s", prog, rs[0], rs[len(rs)-1], oldest[0], oldest[1])
		}
	}
}

// TestEveryMetricExported: at every supported release of its program,
// every panel and alert names a metric that release exports (metrics.tsv),
// or none.
func TestEveryMetricExported(t *testing.T) {
	rows := loadMetricFacts(t)
	check := func(what string, programs []string, variants map[string][]Variant) {
		for _, prog := range programs {
			for _, v := range Releases[prog] {
				r := Release{prog, v}
				if m := MetricOf(variants, r); m != "" && !exported(rows, r, m) {
					t.Errorf("%s names %s at %s, which metrics.tsv says it does not export", what, m, r)
				}
			}
		}
	}
	for _, p := range Panels {
		check("panel "+p.Title, p.Programs, p.Variants)
	}
	for _, a := range Alerts {
		check("alert "+a.Name, a.Programs, a.Variants)
	}
}

// stackAt is a stack of two models (one of which scales to zero) at vLLM
// release v, with the router at r, or with pickers at r.
func stackAt(v Release, r Release) Target {
	t := Target{
		Namespace: "ns", Name: "s",
		Engines: []Source{
			{Service: "s-a-engine-service", Release: v, Model: "a"},
			// b runs the KV offload tiers: the panels of those features too.
			{Service: "s-b-engine-service", Release: v, Model: "b", Features: []string{FeatureKVConnector, FeatureKVOffload}},
		},
		NoEngineAlert: []string{"s-a-engine-service"},
	}
	if r.Program == Router {
		t.Router = &Source{Service: "s-router-service", Release: r}
	} else {
		t.Pickers = []Source{{Service: "s-a-epp", Release: r, Model: "a"}, {Service: "s-b-epp", Release: r, Model: "b"}}
	}
	return t
}

// exprsOf are the expressions of a dashboard's JSON and the programs'
// releases behind the Services each selects.
func exprsOf(t *testing.T, b []byte) []string {
	t.Helper()
	var d struct {
		Panels []struct {
			Type    string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("the dashboard is not JSON: %v", err)
	}
	var out []string
	for _, p := range d.Panels {
		for _, q := range p.Targets {
			out = append(out, q.Expr)
		}
	}
	return out
}

// TestRenderedMetricsExported: a stack's dashboard JSON and its rules, at
// every release of each program, name only metrics those releases export:
// every metric name of every expression, parsed out of what is rendered.
func TestRenderedMetricsExported(t *testing.T) {
	rows := loadMetricFacts(t)
	// releaseOf tells the program behind a selector from its Service.
	releaseOf := func(tg Target, expr, name string) []Release {
		var out []Release
		for _, s := range slices.Concat(tg.Engines, tg.Pickers) {
			if strings.Contains(expr, name+"{") && strings.Contains(expr, s.Service) {
				out = append(out, s.Release)
			}
		}
		if tg.Router != nil && strings.Contains(expr, tg.Router.Service) {
			out = append(out, tg.Router.Release)
		}
		return out
	}
	check := func(tg Target, what, expr string) {
		names := MetricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: %q names no metric", what, expr)
		}
		for _, n := range names {
			rs := releaseOf(tg, expr, n)
			if len(rs) == 0 {
				t.Errorf("%s: %q selects none of the stack's Services", what, expr)
			}
			for _, r := range rs {
				if !exported(rows, r, n) {
					t.Errorf("%s: %q names %s, which %s does not export (metrics.tsv)", what, expr, n, r)
				}
			}
		}
	}
	var others []Release
	for _, p := range []string{Router, GAIE, LLMD} {
		for _, v := range Releases[p] {
			others = append(others, Release{p, v})
		}
	}
	for _, v := range Releases[VLLM] {
		for _, o := range others {
			tg := stackAt(Release{VLLM, v}, o)
			what := fmt.Sprintf("vLLM %s, %s", v, o)
			for _, e := range exprsOf(t, DashboardJSON(tg)) {
				check(tg, what+" dashboard", e)
			}
			for _, r := range Rules(tg, DefaultThresholds) {
				check(tg, what+" alert "+r.Alert, r.Expr)
			}
		}
	}
}

// TestMetricNames: the tokenizer finds the metric names of an expression,
// and nothing else.
func TestMetricNames(t *testing.T) {
	for expr, want := range map[string][]string{
		`sum by (model_name) (vllm:num_requests_running{namespace="ns",service="a"})`:                                               {"vllm:num_requests_running"},
		`histogram_quantile(0.95, sum by (model_name, le) (rate(vllm:time_to_first_token_seconds_bucket{a="b"}[5m])))`:              {"vllm:time_to_first_token_seconds_bucket"},
		`max by (namespace, service, model_name) (x{a="}"}) > 10 and on (namespace, service, model_name) deriv(sum(y)[10m:1m]) > 0`: {"x", "y"},
		`sum by (namespace, service) (m{s=~"a|b"}) == 0 or absent(m{s=~"a|b"})`:                                                     {"m"},
		`rate(up[5m]) * 1e3 + Inf - count without (pod) (z offset 5m) / bool 2`:                                                     {"up", "z"},
		`sum(rate(x[1m])) by (le) + foo{l='it\'s'}`:                                                                                 {"x", "foo"},
	} {
		if got := MetricNames(expr); !slices.Equal(got, want) {
			t.Errorf("MetricNames(%q) = %q, want %q", expr, got, want)
		}
	}
}
