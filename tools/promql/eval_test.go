package promql

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/promslog"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/prometheus/prometheus/rules"
)

// Prometheus evaluates what the function renders, as a Prometheus server
// would: the rendered PrometheusRule's groups loaded as a rule file by the
// rules package's Manager and evaluated a minute at a time by its Group
// (what promtool's `test rules` does: cmd/promtool/unittest.go:225-345 at
// v0.310.0), over series loaded by promqltest's LazyLoader; each rendered
// KEDA trigger's query run as an instant query by the same engine and read
// as KEDA reads it.

// An evaluation is what Prometheus made of one world.
type evaluation struct {
	// firing are the alerts firing after each minute's evaluation, as
	// "Alert{label=value,…}" over the labels that tell them apart.
	firing [minutes + 1][]string
	// values are the rendered triggers' values as KEDA reads them, by
	// trigger ("<ScaledObject>/<trigger name or index>"), at the last
	// minute; an error where KEDA would fail.
	values map[string]kedaValue
}

type kedaValue struct {
	v   float64
	err string
}

func (k kedaValue) String() string {
	if k.err != "" {
		return "error: " + k.err
	}
	return fmt.Sprintf("%g", k.v)
}

// A trigger is one rendered KEDA prometheus trigger.
type trigger struct {
	key, query, threshold string
}

// triggers are the prometheus triggers of every rendered ScaledObject.
func triggers(objs []obj) []trigger {
	var out []trigger
	for _, so := range ofKind(objs, "ScaledObject") {
		ts, _ := get(so, "spec", "triggers").([]any)
		for i, tr := range ts {
			if str(tr, "type") != "prometheus" {
				continue
			}
			name := str(tr, "name")
			if name == "" {
				name = fmt.Sprint(i)
			}
			out = append(out, trigger{key: str(so, "metadata", "name") + "/" + name,
				query: str(tr, "metadata", "query"), threshold: str(tr, "metadata", "threshold")})
		}
	}
	return out
}

// alertKey names a firing alert by the labels that tell one from another.
func alertKey(l labels.Labels) string {
	var parts []string
	for _, k := range []string{"model", "model_name", "service"} {
		if v := l.Get(k); v != "" {
			parts = append(parts, fmt.Sprintf("%s=%q", k, v))
		}
	}
	return l.Get(labels.AlertName) + "{" + strings.Join(parts, ",") + "}"
}

// readKEDA reads a query's result as KEDA v2.20.2's prometheus scaler reads
// the HTTP API's (pkg/scalers/prometheus_scaler.go:266-306): no element is
// 0 (ignoreNullValues, true by default, l.56), more than one is an error
// ("returned multiple elements"), NaN and ±Inf are 0.
func readKEDA(res *promql.Result) kedaValue {
	if res.Err != nil {
		return kedaValue{err: res.Err.Error()}
	}
	vec, err := res.Vector()
	if err != nil {
		return kedaValue{err: "not an instant vector: " + string(res.Value.Type())}
	}
	switch {
	case len(vec) == 0:
		return kedaValue{v: 0}
	case len(vec) > 1:
		return kedaValue{err: fmt.Sprintf("returned multiple elements: %v", vec)}
	case math.IsNaN(vec[0].F) || math.IsInf(vec[0].F, 0):
		return kedaValue{v: 0}
	}
	return kedaValue{v: vec[0].F}
}

// evaluate runs the rendered rules and triggers of objs over the world w of
// the stack's scraped targets for minutes, the rules evaluated every
// minute. An error is a rule file Prometheus refuses or a rule or query it
// cannot evaluate.
func evaluate(t *testing.T, facts []metricFact, objs []obj, w world) (evaluation, error) {
	t.Helper()
	series := load(facts, targets(t, objs), w, scrapeInterval(t, objs))
	suite, err := promqltest.NewLazyLoader(series, promqltest.LazyLoaderOpts{EnableAtModifier: true, EnableNegativeOffset: true})
	if err != nil {
		return evaluation{}, fmt.Errorf("series: %w\n%s", err, series)
	}
	defer suite.Close()
	suite.SubqueryInterval = time.Minute
	ctx := context.Background()

	var groups map[string]*rules.Group
	if len(ofKind(objs, "PrometheusRule")) > 0 {
		file := filepath.Join(t.TempDir(), "rules.json")
		if err := os.WriteFile(file, ruleFile(t, objs), 0o644); err != nil {
			t.Fatal(err)
		}
		m := rules.NewManager(&rules.ManagerOptions{
			QueryFunc:  rules.EngineQueryFunc(suite.QueryEngine(), suite.Storage()),
			Appendable: suite.Storage(),
			Context:    ctx,
			NotifyFunc: func(context.Context, string, ...*rules.Alert) {},
			Logger:     promslog.NewNopLogger(),
		})
		var errs []error
		groups, errs = m.LoadGroups(time.Minute, labels.EmptyLabels(), "", nil, false, file)
		if len(errs) > 0 {
			return evaluation{}, fmt.Errorf("Prometheus refuses the rule file: %v", errs)
		}
		for _, g := range groups {
			for _, r := range g.Rules() {
				if a, ok := r.(*rules.AlertingRule); ok {
					a.SetRestored(true) // as promtool: a fresh server's rules start restored
				}
			}
		}
	}

	var out evaluation
	start := time.Unix(0, 0).UTC()
	var evalErr error
	for m := 0; m <= minutes; m++ {
		ts := start.Add(time.Duration(m) * time.Minute)
		suite.WithSamplesTill(ts, func(err error) {
			if err != nil {
				evalErr = err
				return
			}
			for _, name := range slicesSorted(groups) {
				g := groups[name]
				g.Eval(ctx, ts)
				for _, r := range g.Rules() {
					if r.LastError() != nil && evalErr == nil {
						evalErr = fmt.Errorf("rule %s at minute %d: %w", r.Name(), m, r.LastError())
					}
					if a, ok := r.(*rules.AlertingRule); ok {
						for _, al := range a.ActiveAlerts() {
							if al.State == rules.StateFiring {
								out.firing[m] = append(out.firing[m], alertKey(al.Labels))
							}
						}
					}
				}
			}
		})
		slices.Sort(out.firing[m])
		out.firing[m] = slices.Compact(out.firing[m])
	}
	if evalErr != nil {
		return out, evalErr
	}
	end := start.Add(minutes * time.Minute)
	out.values = map[string]kedaValue{}
	for _, tr := range triggers(objs) {
		q, err := suite.QueryEngine().NewInstantQuery(ctx, suite.Queryable(), nil, tr.query, end)
		if err != nil {
			out.values[tr.key] = kedaValue{err: err.Error()}
			continue
		}
		out.values[tr.key] = readKEDA(q.Exec(ctx))
		q.Close()
	}
	return out, nil
}

func slicesSorted(m map[string]*rules.Group) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
