package promql

import (
	"encoding/json"
	"time"

	"fmt"
	"github.com/prometheus/common/model"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// The world a rendered stack runs in, as Prometheus would scrape it: every
// pod behind a Service a rendered ServiceMonitor selects exports the series
// its program's release exports (metrics.tsv: names, kinds and labels, for
// that release only), with the labels the Prometheus Operator adds to every
// target (namespace, service, pod, container, endpoint, job, instance;
// prometheus-operator's pkg/prometheus/promcfg.go relabelling). Nothing of
// it comes from the code that renders the queries: a query that names a
// metric or a label the release does not export finds no series.

// obj is one rendered object, as JSON.
type obj = map[string]any

// get is the value at a path of o.
func get(o any, path ...string) any {
	for _, p := range path {
		m, ok := o.(map[string]any)
		if !ok {
			return nil
		}
		o = m[p]
	}
	return o
}

func str(o any, path ...string) string { s, _ := get(o, path...).(string); return s }

func strMap(o any) map[string]string {
	out := map[string]string{}
	m, _ := o.(map[string]any)
	for k, v := range m {
		out[k], _ = v.(string)
	}
	return out
}

// render composes xr's objects as the function does (a second reconcile,
// every object of the first observed), as JSON.
func render(t *testing.T, xr map[string]any) []obj {
	t.Helper()
	m := stacktest.Read(t, xr)
	spec, raw, err := stack.DecodeSpec(m.Spec)
	if err != nil {
		t.Fatal(err)
	}
	compose := func(observed map[string]bool) []stack.Object {
		s := stack.New(stack.Identity{Name: m.Name, Namespace: m.Namespace}, spec, &v1beta1.Input{})
		if err := s.Validate(raw).Err(); err != nil {
			t.Fatalf("refused: %v", err)
		}
		objs, err := s.Compose(stack.Keys(func(k string) bool { return observed[k] }))
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	seen := map[string]bool{}
	for _, o := range compose(nil) {
		seen[o.Key] = true
	}
	var out []obj
	for _, o := range compose(seen) {
		out = append(out, stacktest.AsJSON[obj](t, o.Obj))
	}
	return out
}

func ofKind(objs []obj, kind string) []obj {
	var out []obj
	for _, o := range objs {
		if o["kind"] == kind {
			out = append(out, o)
		}
	}
	return out
}

// selects reports whether a selector's labels are all among labels.
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// A scraped target is one pod Prometheus scrapes through a ServiceMonitor.
type scraped struct {
	program string // metrics.tsv's component: vllm, router, gaie, llm-d
	version upstream.Version
	target  map[string]string // the operator's labels
	model   string            // the served model whose signals the pod exports ("" for the router)
	own     map[string]string // values of the release's own labels
	engines []string          // the router: the engine URLs it discovers, by model below
	byURL   map[string]string // engine URL -> served model
}

// servedName is the model_name label vLLM gives its series:
// served_model_name's first value, else the model
// (get_served_model_name, vllm/config.py:2852@v0.8.3,
// vllm/config/model.py:2111@017e9f4448; vllm/v1/metrics/loggers.py:117-119
// @v0.8.3, :468-469 @017e9f4448).
func servedName(args []string) string {
	if v, ok := stacktest.ArgValue(args, "--served-model-name"); ok {
		return v
	}
	if v, ok := stacktest.ArgValue(args, "--model"); ok {
		return v
	}
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		return args[0]
	}
	return ""
}

// imageVersion is the release an image tag names (v0.12.0 -> 0.12.0).
func imageVersion(t *testing.T, image string) upstream.Version {
	t.Helper()
	tag := image[strings.LastIndex(image, ":")+1:]
	v, ok := upstream.ParseVersion(strings.TrimPrefix(tag, "v"))
	if !ok {
		t.Fatalf("image %q names no release", image)
	}
	return v
}

func containers(d obj) []any {
	c, _ := get(d, "spec", "template", "spec", "containers").([]any)
	return c
}

func stringsOf(a any) []string {
	var out []string
	l, _ := a.([]any)
	for _, x := range l {
		s, _ := x.(string)
		out = append(out, s)
	}
	return out
}

// scrapeInterval is the rendered ServiceMonitors' interval (one for all).
func scrapeInterval(t *testing.T, objs []obj) time.Duration {
	t.Helper()
	var out time.Duration
	for _, sm := range ofKind(objs, "ServiceMonitor") {
		d, err := model.ParseDuration(str(get(sm, "spec", "endpoints").([]any)[0], "interval"))
		if err != nil || out != 0 && time.Duration(d) != out {
			t.Fatalf("ServiceMonitor %s: interval %v (%v)", str(sm, "metadata", "name"), d, err)
		}
		out = time.Duration(d)
	}
	return out
}

// targets are the pods Prometheus scrapes through the stack's
// ServiceMonitors: each Service a ServiceMonitor selects, each replica of
// each Deployment the Service selects, with the program and release its
// image runs.
func targets(t *testing.T, objs []obj) []scraped {
	t.Helper()
	served := map[string]string{} // Deployment -> served model
	podLabels := map[string]map[string]string{}
	for _, d := range ofKind(objs, "Deployment") {
		podLabels[str(d, "metadata", "name")] = strMap(get(d, "spec", "template", "metadata", "labels"))
		for _, c := range containers(d) {
			if str(c, "name") == "vllm" {
				served[str(d, "metadata", "name")] = servedName(stringsOf(get(c, "args")))
			}
		}
	}
	pools := map[string]string{} // InferencePool -> served model
	for _, p := range ofKind(objs, "InferencePool") {
		sel := strMap(get(p, "spec", "selector", "matchLabels"))
		for d, l := range podLabels {
			if served[d] != "" && selects(sel, l) {
				pools[str(p, "metadata", "name")] = served[d]
			}
		}
	}
	var engineURLs []string
	byURL := map[string]string{}
	var out []scraped
	ip := 0
	for _, sm := range ofKind(objs, "ServiceMonitor") {
		sel := strMap(get(sm, "spec", "selector", "matchLabels"))
		port := str(get(sm, "spec", "endpoints").([]any)[0], "port")
		for _, svc := range ofKind(objs, "Service") {
			if !selects(sel, strMap(get(svc, "metadata", "labels"))) {
				continue
			}
			ssel := strMap(get(svc, "spec", "selector"))
			for _, d := range ofKind(objs, "Deployment") {
				name := str(d, "metadata", "name")
				if !selects(ssel, podLabels[name]) {
					continue
				}
				// Two pods where an autoscaler owns the replicas (the
				// Deployment leaves them out) or a model may be at zero:
				// the cases take a model down where they need it.
				replicas := 2
				if r, ok := get(d, "spec", "replicas").(float64); ok && r > 0 {
					replicas = int(r)
				}
				image := str(containers(d)[0], "image")
				for i := range replicas {
					ip++
					pod := fmt.Sprintf("%s-%d", name, i)
					tl := map[string]string{"namespace": str(svc, "metadata", "namespace"), "service": str(svc, "metadata", "name"),
						"pod": pod, "container": str(containers(d)[0], "name"), "endpoint": port,
						"job": str(svc, "metadata", "name"), "instance": fmt.Sprintf("10.0.0.%d:8000", ip)}
					sc := scraped{target: tl, version: imageVersion(t, image)}
					switch str(sm, "metadata", "labels", "app.kubernetes.io/component") {
					case stack.ComponentEngine:
						sc.program, sc.model = "vllm", served[name]
						sc.own = map[string]string{"model_name": served[name], "engine": "0"}
						u := fmt.Sprintf("http://10.0.0.%d:8000", ip)
						engineURLs = append(engineURLs, u)
						byURL[u] = served[name]
					case stack.ComponentRouter:
						sc.program = "router"
					case stack.ComponentPicker:
						sc.program = upstream.PickerKindOf(image[:strings.LastIndex(image, ":")])
						args := stringsOf(get(containers(d)[0], "args"))
						pool, _ := stacktest.ArgValue(args, "--pool-name")
						sc.model = pools[pool]
						sc.own = map[string]string{"name": pool, "inference_pool": pool, "model_name": pools[pool], "target_model_name": pools[pool],
							"fairness_id": "default-flow", "priority": "0"}
					default:
						t.Fatalf("ServiceMonitor %s: unknown component", str(sm, "metadata", "name"))
					}
					out = append(out, sc)
				}
			}
		}
	}
	for i := range out {
		if out[i].program == "router" {
			out[i].engines, out[i].byURL = engineURLs, byURL
		}
	}
	if len(out) == 0 {
		t.Fatal("no ServiceMonitor selects a Service")
	}
	return out
}

// A metricFact is a row of metrics.tsv.
type metricFact struct {
	program, name, kind string
	labels              []string
	v1Only              bool
	first, last         upstream.Version
}

func metricFacts(t *testing.T) []metricFact {
	t.Helper()
	rows, err := stacktest.ReadTSV("../../stack/testdata/upstream/metrics.tsv", 8)
	if err != nil {
		t.Fatal(err)
	}
	var out []metricFact
	for _, r := range rows {
		first, ok1 := upstream.ParseVersion(r[5])
		last, ok2 := upstream.ParseVersion(r[6])
		if !ok1 || !ok2 {
			t.Fatalf("metrics.tsv: %q", r)
		}
		out = append(out, metricFact{program: r[0], name: r[1], kind: r[2], labels: strings.Split(r[3], ","), v1Only: r[4] == "v1", first: first, last: last})
	}
	return out
}

// exports are the rows release v of program exports (the V1 engine's, for
// vLLM: the default of every release the function renders).
func exports(facts []metricFact, program string, v upstream.Version) []metricFact {
	var out []metricFact
	for _, f := range facts {
		if f.program == program && v.AtLeast(f.first) && !f.last.Less(v) {
			out = append(out, f)
		}
	}
	return out
}

// Signals are what a case sets, each by every name it has had in any
// release: the release's own row in metrics.tsv decides which it exports.
var signals = map[string][]string{
	"running":    {"vllm:num_requests_running"},
	"waiting":    {"vllm:num_requests_waiting"},
	"kv":         {"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"},
	"healthy":    {"vllm:healthy_pods_total"},
	"incoming":   {"vllm:num_incoming_requests_total"},
	"queue":      {"inference_extension_flow_control_queue_size", "llm_d_epp_flow_control_queue_size"},
	"inflight":   {"inference_objective_running_requests", "llm_d_epp_request_running"},
	"saturation": {"inference_extension_flow_control_pool_saturation", "llm_d_epp_flow_control_pool_saturation"},
}

func signalOf(metric string) string {
	for s, names := range signals {
		if slices.Contains(names, metric) {
			return s
		}
	}
	return ""
}

// A curve is a value at each moment, in minutes; absent where ok is false.
type curve func(minute float64) (float64, bool)

func flat(v float64) curve { return func(float64) (float64, bool) { return v, true } }

// ramp rises by step a minute from start.
func ramp(start, step float64) curve {
	return func(m float64) (float64, bool) { return start + step*m, true }
}

// from is c from minute on, v before.
func from(minute, v float64, c curve) curve {
	return func(m float64) (float64, bool) {
		if m < minute {
			return v, true
		}
		return c(m)
	}
}

// absent is a series with no sample.
var absent curve = func(float64) (float64, bool) { return 0, false }

// A world is what a case makes the scraped pods export: by signal, by
// served model (the router's and the pickers' signals too), a curve per
// pod; down models export nothing from their engines. Unset signals are 0.
type world struct {
	values  map[string]map[string]curve
	down    []string // served models whose engines are not scraped
	noRoute bool     // the router (or pickers) not scraped
}

// healthyByDefault: the router sees every engine of a model that is up.
// A curve set for "service:<name>" is that Service's pods' (the groups of
// a disaggregated model serve one model name).
func (w world) curve(signal, model, service string) curve {
	if c, ok := w.values[signal]["service:"+service]; ok {
		return c
	}
	if c, ok := w.values[signal][model]; ok {
		return c
	}
	if signal == "healthy" {
		return flat(1)
	}
	return flat(0)
}

// minutes is how long every case runs, at one sample and one rule
// evaluation a minute.
const minutes = 30

// load is the series of w over targets in promqltest's load notation, a
// sample every interval (the ServiceMonitors' scrape interval).
func load(facts []metricFact, targets []scraped, w world, interval time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "load %s\n", model.Duration(interval))
	for _, tg := range targets {
		if tg.program == "vllm" && slices.Contains(w.down, tg.model) || tg.program != "vllm" && w.noRoute {
			continue
		}
		for _, f := range exports(facts, tg.program, tg.version) {
			if f.kind == "histogram" {
				continue // no rule or trigger reads one
			}
			// The router's series: one per engine URL it discovers
			// (server) or per model (model).
			type one struct {
				own   map[string]string
				model string
			}
			var each []one
			switch {
			case tg.program == "router" && slices.Contains(f.labels, "server"):
				for _, u := range tg.engines {
					if slices.Contains(w.down, tg.byURL[u]) && f.name == "vllm:healthy_pods_total" {
						continue // router 0.1.12 clears gone engines; older ones would keep 1 (the rule is not rendered for them)
					}
					each = append(each, one{map[string]string{"server": u, "model": tg.byURL[u]}, tg.byURL[u]})
				}
			case tg.program == "router":
				for _, m := range slices.Sorted(maps.Keys(invert(tg.byURL))) {
					each = append(each, one{map[string]string{"model": m}, m})
				}
			default:
				each = []one{{tg.own, tg.model}}
			}
			for _, e := range each {
				l := maps.Clone(tg.target)
				for _, name := range f.labels {
					if v, ok := e.own[name]; ok {
						l[name] = v
					} else {
						l[name] = "x"
					}
				}
				c := flat(0)
				if s := signalOf(f.name); s != "" {
					c = w.curve(s, e.model, tg.target["service"])
				}
				fmt.Fprintf(&b, "  %s{", f.name)
				for i, k := range slices.Sorted(maps.Keys(l)) {
					if i > 0 {
						b.WriteString(",")
					}
					fmt.Fprintf(&b, "%s=%q", k, l[k])
				}
				b.WriteString("}")
				for at := time.Duration(0); at <= minutes*time.Minute; at += interval {
					if v, ok := c(at.Minutes()); ok {
						fmt.Fprintf(&b, " %g", v)
					} else {
						b.WriteString(" _")
					}
				}
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

func invert(m map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[v] = k
	}
	return out
}

// ruleFile is the rendered PrometheusRule's spec as a rule file: the
// Prometheus Operator writes spec.groups to Prometheus's rule files as they
// are (a PrometheusRule's spec is a rule file's content).
func ruleFile(t *testing.T, objs []obj) []byte {
	t.Helper()
	rules := ofKind(objs, "PrometheusRule")
	if len(rules) != 1 {
		t.Fatalf("%d PrometheusRules", len(rules))
	}
	b, err := json.Marshal(rules[0]["spec"])
	if err != nil {
		t.Fatal(err)
	}
	return b
}
