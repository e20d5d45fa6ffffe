package promql

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// The releases each program's cases run at: the oldest and newest the
// function renders for (upstream's bounds), and for a feature a release
// must have, the oldest that has it.
var (
	vllmReleases = []upstream.Version{upstream.VLLMOldest, upstream.VLLMNewest}
	routing      = []routingLayer{
		{"router", upstream.RouterOldest}, {"router", upstream.RouterNewest},
		{"gaie", upstream.PickerOldest["gaie"]}, {"gaie", upstream.PickerNewest["gaie"]},
		{"llm-d", upstream.PickerOldest["llm-d"]}, {"llm-d", upstream.PickerNewest["llm-d"]},
	}
	// Scale to zero needs router 0.1.8 (vllm:num_incoming_requests) and a
	// picker with flow control's request TTL (GAIE v1.4.0, llm-d v0.7.0):
	// older ones are refused (stack/validate/scaling.go).
	zeroRouting = []routingLayer{
		{"router", upstream.V(0, 1, 8)}, {"router", upstream.RouterNewest},
		{"gaie", upstream.V(1, 4, 0)}, {"gaie", upstream.PickerNewest["gaie"]},
		{"llm-d", upstream.V(0, 7, 0)}, {"llm-d", upstream.PickerNewest["llm-d"]},
	}
)

// Pool saturation needs a picker that exports it: GAIE v1.5.0, llm-d
// v0.8.0 (GAIE's name) and v0.9.0 on (llm-d's); older ones are refused
// (stack/validate/pickerscaling.go).
var saturationRouting = []routingLayer{
	{"gaie", upstream.V(1, 5, 0)},
	{"llm-d", upstream.V(0, 8, 0)}, {"llm-d", upstream.PickerNewest["llm-d"]},
}

type routingLayer struct {
	program string
	version upstream.Version
}

func (r routingLayer) String() string { return r.program + " " + r.version.String() }

// xr is a stack of two models, a and b (served as org/a and org/b), on
// vLLM v behind r, monitored (ServiceMonitors and the PrometheusRule), with
// more spec fields at dotted paths.
func xr(v upstream.Version, r routingLayer, kv ...any) map[string]any {
	models := []any{
		map[string]any{"name": "a", "modelURL": "org/a"},
		map[string]any{"name": "b", "modelURL": "org/b"},
	}
	base := []any{"model", nil, "models", models, "vllmConfig.image", "vllm/vllm-openai:v" + v.String(),
		"monitoring", map[string]any{"serviceMonitor": map[string]any{}, "alerts": map[string]any{}}}
	switch r.program {
	case "router":
		base = append(base, "routerConfig.image", "lmcache/lmstack-router:v"+r.version.String())
	case "gaie":
		base = append(base, "inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}},
			"picker": map[string]any{"image": upstream.GAIEPickerImage + ":v" + r.version.String()}})
	case "llm-d":
		base = append(base, "inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}},
			"picker": map[string]any{"image": upstream.LLMDPickerImage + ":v" + r.version.String()}})
	}
	return stacktest.With(append(base, kv...)...)
}

// The labels alerts carry, by the rendered names of the stack "s".
func engineService(model string) string { return "s-" + model + "-engine-service" }

func noEngine(model string) string {
	return fmt.Sprintf("VLLMModelNoReadyEngine{model=%q,service=%q}", "org/"+model, engineService(model))
}
func waitingGrowing(model string) string {
	return fmt.Sprintf("VLLMRequestsWaitingGrowing{model_name=%q,service=%q}", "org/"+model, engineService(model))
}
func kvFull(model string) string {
	return fmt.Sprintf("VLLMKVCacheNearlyFull{model_name=%q,service=%q}", "org/"+model, engineService(model))
}

var routerNoEngines = `VLLMRouterNoEngines{service="s-router-service"}`

func pickerQueueGrowing(model string) string {
	return fmt.Sprintf("VLLMPickerQueueGrowing{service=%q}", "s-"+model+"-epp")
}

// An alertCase is a world and the alerts that must fire in it: at the last
// minute, and none at minute quietUntil (a rule's `for` not yet passed).
type alertCase struct {
	name string
	w    world
	// want fires at the last minute; wantRouter too where the router's
	// rule is rendered (router 0.1.12 and later), wantPicker behind the
	// endpoint pickers.
	want, wantRouter, wantPicker []string
	quietAt                      int // a minute at which nothing fires yet (0: not checked)
}

func byModel(kv ...any) map[string]curve {
	m := map[string]curve{}
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(curve)
	}
	return m
}

// everyday is a stack at work: requests running and a few waiting, the
// KV cache half full, every engine healthy.
func everyday() map[string]map[string]curve {
	return map[string]map[string]curve{
		"running": byModel("org/a", flat(3), "org/b", flat(2)),
		"waiting": byModel("org/a", flat(2), "org/b", flat(1)),
		"kv":      byModel("org/a", flat(0.5), "org/b", flat(0.4)),
	}
}

func with(base map[string]map[string]curve, signal string, m map[string]curve) map[string]map[string]curve {
	out := map[string]map[string]curve{}
	for k, v := range base {
		out[k] = v
	}
	merged := map[string]curve{}
	for k, v := range base[signal] {
		merged[k] = v
	}
	for k, v := range m {
		merged[k] = v
	}
	out[signal] = merged
	return out
}

var alertCases = []alertCase{
	{name: "quiet", w: world{values: everyday()}},
	{name: "model a down", w: world{values: everyday(), down: []string{"org/a"}},
		want: []string{noEngine("a")}, quietAt: 4},
	{name: "waiting requests grow over the bound", w: world{values: with(everyday(), "waiting", byModel("org/a", ramp(0, 3)))},
		want: []string{waitingGrowing("a")}, quietAt: 4},
	{name: "waiting requests over the bound, not growing", w: world{values: with(everyday(), "waiting", byModel("org/a", flat(30)))}},
	{name: "waiting requests grow under the bound", w: world{values: with(everyday(), "waiting", byModel("org/a", ramp(0, 0.3)))}},
	{name: "KV cache nearly full", w: world{values: with(everyday(), "kv", byModel("org/b", flat(0.95)))},
		want: []string{kvFull("b")}, quietAt: 4},
	{name: "KV cache below the bound", w: world{values: with(everyday(), "kv", byModel("org/a", flat(0.85), "org/b", flat(0.89)))}},
	{name: "KV cache full for less than 5m", w: world{values: with(everyday(), "kv", byModel("org/a", from(27, 0.5, flat(0.97))))}},
	{name: "the router sees no healthy engine", w: world{values: with(everyday(), "healthy", byModel("org/a", flat(0), "org/b", flat(0)))},
		wantRouter: []string{routerNoEngines}, quietAt: 4},
	{name: "the router sees one healthy engine", w: world{values: with(everyday(), "healthy", byModel("org/a", flat(0)))}},
	{name: "the router is not scraped", w: world{values: everyday(), noRoute: true},
		wantRouter: []string{routerNoEngines}, quietAt: 4},
	{name: "the picker's queue grows over the bound", w: world{values: with(everyday(), "queue", byModel("org/a", ramp(0, 1)))},
		wantPicker: []string{pickerQueueGrowing("a")}, quietAt: 4},
	{name: "the picker's queue over the bound, not growing", w: world{values: with(everyday(), "queue", byModel("org/a", flat(30)))}},
	{name: "the picker's queue grows under the bound", w: world{values: with(everyday(), "queue", byModel("org/a", ramp(0, 0.1)))}},
	{name: "the picker's queue over the bound, draining", w: world{values: with(everyday(), "queue", byModel("org/a", ramp(60, -1)))}},
}

// checkAlerts evaluates the rendered rules of objs (a stack of xr at v
// behind r) in every alert case and says where they do not do what the
// case asks.
func checkAlerts(t *testing.T, facts []metricFact, objs []obj, r routingLayer) []string {
	t.Helper()
	routerRule := strings.Contains(string(ruleFile(t, objs)), `"VLLMRouterNoEngines"`)
	if want := r.program == "router" && r.version.AtLeast(upstream.V(0, 1, 12)); routerRule != want {
		return []string{fmt.Sprintf("VLLMRouterNoEngines rendered: %v, want %v", routerRule, want)}
	}
	var problems []string
	for _, c := range alertCases {
		ev, err := evaluate(t, facts, objs, c.w)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", c.name, err))
			continue
		}
		want := slices.Clone(c.want)
		if routerRule {
			want = append(want, c.wantRouter...)
		}
		if r.program != "router" {
			want = append(want, c.wantPicker...)
		}
		slices.Sort(want)
		if got := ev.firing[minutes]; !slices.Equal(got, want) {
			problems = append(problems, fmt.Sprintf("%s: firing %q, want %q", c.name, got, want))
		}
		if c.quietAt > 0 && len(ev.firing[c.quietAt]) > 0 {
			problems = append(problems, fmt.Sprintf("%s: firing %q at minute %d, before the rules' for: 5m", c.name, ev.firing[c.quietAt], c.quietAt))
		}
	}
	return problems
}

// TestAlertsEvaluated: Prometheus's own rule evaluation fires each rendered
// alert in the cases it is meant for and no other, at the oldest and newest
// release of vLLM and of each routing layer.
func TestAlertsEvaluated(t *testing.T) {
	facts := metricFacts(t)
	for _, v := range vllmReleases {
		for _, r := range routing {
			t.Run(fmt.Sprintf("vLLM %s, %s", v, r), func(t *testing.T) {
				for _, p := range checkAlerts(t, facts, render(t, xr(v, r)), r) {
					t.Error(p)
				}
			})
		}
	}
}

// A triggerCase is a world and the value each rendered trigger must give
// KEDA in it, by the trigger's key suffix (the ScaledObject of model a).
type triggerCase struct {
	name string
	w    world
	want map[string]float64
}

const (
	autoscaled = "s-a-scaledobject/0"
	wake       = "s-a-scaledobject/wake"
	waiting    = "s-a-scaledobject/waiting"
)

// Model a: two pods when serving; model b's numbers must never reach a's
// triggers.
var autoscalingCases = []triggerCase{
	{name: "waiting requests summed over the model's pods", w: world{values: with(everyday(), "waiting", byModel("org/a", flat(3), "org/b", flat(100)))},
		want: map[string]float64{autoscaled: 6}},
	{name: "no waiting request", w: world{values: with(everyday(), "waiting", byModel("org/a", flat(0), "org/b", flat(100)))},
		want: map[string]float64{autoscaled: 0}},
}

// autoscaling.signal pickerRunning: the requests model a's picker has in
// flight; model b's picker's must not reach it.
var pickerRunningCases = []triggerCase{
	{name: "requests in flight at the model's picker", w: world{values: with(everyday(), "inflight", byModel("org/a", flat(5), "org/b", flat(100)))},
		want: map[string]float64{autoscaled: 5}},
	{name: "the picker restarted and exports no gauge yet", w: world{values: with(everyday(), "inflight", byModel("org/a", absent, "org/b", flat(100)))},
		want: map[string]float64{autoscaled: 0}},
}

// autoscaling.signal poolSaturation: the saturation of model a's pool, the
// highest of its picker's replicas (KEDA compares it with the threshold as
// a Value); model b's pool must not reach it; before the pool's first
// request GAIE v1.5.0's picker has no processor and exports no series.
var poolSaturationCases = []triggerCase{
	{name: "the pool's saturation", w: world{values: with(everyday(), "saturation", byModel("org/a", flat(0.45), "org/b", flat(1)))},
		want: map[string]float64{autoscaled: 0.45}},
	{name: "model a at zero reads saturated", w: world{values: with(everyday(), "saturation", byModel("org/a", flat(1), "org/b", flat(0.2))), down: []string{"org/a"}},
		want: map[string]float64{autoscaled: 1}},
	{name: "no request yet: no series", w: world{values: with(everyday(), "saturation", byModel("org/a", absent, "org/b", flat(1)))},
		want: map[string]float64{autoscaled: 0}},
}

// autoscaling.triggers: each trigger of model a's ScaledObject, by name,
// on its own signal; KEDA's autoscaler takes the most replicas of them.
var (
	severalTriggers = []any{
		map[string]any{"name": "waiting", "signal": "engineWaiting"},
		map[string]any{"name": "running", "signal": "pickerRunning", "threshold": "8"},
		map[string]any{"name": "saturation", "signal": "poolSaturation"},
		map[string]any{"name": "kv", "query": `max(vllm:kv_cache_usage_perc{model_name="org/a"} or vllm:gpu_cache_usage_perc{model_name="org/a"})`, "threshold": "0.8"},
	}
	severalTriggersCases = []triggerCase{
		{name: "each trigger its own signal", w: world{values: with(with(with(with(everyday(),
			"waiting", byModel("org/a", flat(3), "org/b", flat(100))),
			"inflight", byModel("org/a", flat(12), "org/b", flat(100))),
			"saturation", byModel("org/a", flat(0.6), "org/b", flat(1))),
			"kv", byModel("org/a", flat(0.7), "org/b", flat(1)))},
			want: map[string]float64{"s-a-scaledobject/waiting": 6, "s-a-scaledobject/running": 12, "s-a-scaledobject/saturation": 0.6, "s-a-scaledobject/kv": 0.7}},
	}
)

// Each group of a disaggregated model a scales on its own engines' waiting
// requests (two pods each).
var groupCases = []triggerCase{
	{name: "each group's waiting requests", w: world{values: with(everyday(), "waiting", byModel("service:s-a-prefill-engine-service", flat(3), "service:s-a-decode-engine-service", flat(7)))},
		want: map[string]float64{"s-a-prefill-scaledobject/0": 6, "s-a-decode-scaledobject/0": 14}},
}

var zeroRouterCases = []triggerCase{
	{name: "at zero, no request for a minute", w: world{values: with(everyday(), "incoming", byModel("org/a", flat(40), "org/b", ramp(0, 5))), down: []string{"org/a"}},
		want: map[string]float64{wake: 0, waiting: 0}},
	{name: "at zero, a request comes", w: world{values: with(everyday(), "incoming", byModel("org/a", from(29.75, 40, flat(41)), "org/b", ramp(0, 5))), down: []string{"org/a"}},
		want: map[string]float64{wake: 1, waiting: 0}},
	{name: "at zero, the router never counted the model", w: world{values: with(everyday(), "incoming", byModel("org/a", absent, "org/b", ramp(0, 5))), down: []string{"org/a"}},
		want: map[string]float64{wake: 0, waiting: 0}},
	{name: "serving, requests waiting", w: world{values: with(with(everyday(), "incoming", byModel("org/a", ramp(0, 2))), "waiting", byModel("org/a", flat(4), "org/b", flat(100)))},
		want: map[string]float64{wake: 1, waiting: 8}},
}

var zeroPickerCases = []triggerCase{
	{name: "at zero, nothing held", w: world{values: with(everyday(), "queue", byModel("org/b", flat(7))), down: []string{"org/a"}},
		want: map[string]float64{wake: 0, waiting: 0}},
	{name: "at zero, the picker holds requests", w: world{values: with(everyday(), "queue", byModel("org/a", flat(2), "org/b", flat(7))), down: []string{"org/a"}},
		want: map[string]float64{wake: 1, waiting: 0}},
	{name: "at zero, the picker restarted and exports no queue yet", w: world{values: with(everyday(), "queue", byModel("org/a", absent, "org/b", flat(7))), down: []string{"org/a"}},
		want: map[string]float64{wake: 0, waiting: 0}},
	{name: "serving, nothing held, requests running and waiting", w: world{values: with(everyday(), "waiting", byModel("org/a", flat(4), "org/b", flat(100)))},
		want: map[string]float64{wake: 1, waiting: 8}},
	{name: "serving idle", w: world{values: with(with(everyday(), "running", byModel("org/a", flat(0))), "waiting", byModel("org/a", flat(0)))},
		want: map[string]float64{wake: 0, waiting: 0}},
}

// checkTriggers evaluates every rendered trigger of objs in each case:
// each returns, as KEDA reads it, the value the case wants, and no
// trigger is left unchecked.
func checkTriggers(t *testing.T, facts []metricFact, objs []obj, cases []triggerCase) []string {
	t.Helper()
	var problems []string
	rendered := map[string]bool{}
	for _, tr := range triggers(objs) {
		rendered[tr.key] = true
	}
	for _, c := range cases {
		ev, err := evaluate(t, facts, objs, c.w)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", c.name, err))
			continue
		}
		for key := range rendered {
			want, ok := c.want[key]
			if !ok {
				problems = append(problems, fmt.Sprintf("%s: trigger %s rendered, no value wanted", c.name, key))
				continue
			}
			if got := ev.values[key]; got.err != "" || got.v != want {
				q := ""
				for _, tr := range triggers(objs) {
					if tr.key == key {
						q = tr.query
					}
				}
				problems = append(problems, fmt.Sprintf("%s: trigger %s (%s) gives KEDA %s, want %g", c.name, key, q, got, want))
			}
		}
		for key := range c.want {
			if !rendered[key] {
				problems = append(problems, fmt.Sprintf("%s: no trigger %s rendered", c.name, key))
			}
		}
	}
	return problems
}

var (
	autoscaling = map[string]any{"minReplicas": 1, "maxReplicas": 4, "prometheusAddress": "http://prometheus-operated.monitoring:9090"}
	scaleToZero = map[string]any{"maxReplicas": 4, "prometheusAddress": "http://prometheus-operated.monitoring:9090"}
)

// withBlock is block with more fields.
func withBlock(block map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range block {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// scaled is xr with model a scaled by block (autoscaling or scaleToZero).
func scaled(v upstream.Version, r routingLayer, field string, block map[string]any) map[string]any {
	x := xr(v, r)
	models := x["spec"].(map[string]any)["models"].([]any)
	models[0].(map[string]any)[field] = block
	return x
}

// disaggregated is a stack serving model a alone, disaggregated, each group
// autoscaled with KEDA on its default signal (on vLLM 0.10.2 at the
// oldest, the first image with NIXL).
func disaggregated(v upstream.Version, r routingLayer) map[string]any {
	if nixl := upstream.V(0, 10, 2); v.Less(nixl) {
		v = nixl
	}
	x := xr(v, r)
	spec := x["spec"].(map[string]any)
	spec["models"] = spec["models"].([]any)[:1]
	spec["disaggregation"] = map[string]any{"prefill": map[string]any{"autoscaling": autoscaling}, "decode": map[string]any{"autoscaling": autoscaling}}
	return x
}

// TestTriggersEvaluated: every KEDA trigger the function renders returns,
// evaluated by Prometheus and read as KEDA reads it, the value its
// threshold is compared with, at the oldest and newest release of vLLM and
// of each routing layer that has the feature.
func TestTriggersEvaluated(t *testing.T) {
	facts := metricFacts(t)
	for _, v := range vllmReleases {
		for _, r := range routing {
			t.Run(fmt.Sprintf("autoscaling, vLLM %s, %s", v, r), func(t *testing.T) {
				for _, p := range checkTriggers(t, facts, render(t, scaled(v, r, "autoscaling", autoscaling)), autoscalingCases) {
					t.Error(p)
				}
			})
		}
		for _, r := range routing[2:] {
			t.Run(fmt.Sprintf("autoscaling on pickerRunning, vLLM %s, %s", v, r), func(t *testing.T) {
				for _, p := range checkTriggers(t, facts, render(t, scaled(v, r, "autoscaling", withBlock(autoscaling, "signal", "pickerRunning"))), pickerRunningCases) {
					t.Error(p)
				}
			})
		}
		for _, r := range saturationRouting {
			t.Run(fmt.Sprintf("autoscaling on poolSaturation, vLLM %s, %s", v, r), func(t *testing.T) {
				for _, p := range checkTriggers(t, facts, render(t, scaled(v, r, "autoscaling", withBlock(autoscaling, "signal", "poolSaturation"))), poolSaturationCases) {
					t.Error(p)
				}
			})
			t.Run(fmt.Sprintf("autoscaling on several triggers, vLLM %s, %s", v, r), func(t *testing.T) {
				for _, p := range checkTriggers(t, facts, render(t, scaled(v, r, "autoscaling", withBlock(autoscaling, "triggers", severalTriggers))), severalTriggersCases) {
					t.Error(p)
				}
			})
		}
		for _, r := range []routingLayer{routing[1], routing[5]} {
			t.Run(fmt.Sprintf("prefill and decode autoscaling, vLLM %s, %s", v, r), func(t *testing.T) {
				for _, p := range checkTriggers(t, facts, render(t, disaggregated(v, r)), groupCases) {
					t.Error(p)
				}
			})
		}
		for _, r := range zeroRouting {
			cases := zeroPickerCases
			if r.program == "router" {
				cases = zeroRouterCases
			}
			// Scraped every 30 s (the ServiceMonitor's default) and every
			// minute (Prometheus's own default): a rate over one minute
			// would see no request at all then.
			for _, interval := range []string{"", "1m"} {
				t.Run(fmt.Sprintf("scaleToZero, vLLM %s, %s, interval %q", v, r, interval), func(t *testing.T) {
					x := scaled(v, r, "scaleToZero", scaleToZero)
					if interval != "" {
						stacktest.SetPath(x, "spec.monitoring.serviceMonitor.interval", interval)
					}
					for _, p := range checkTriggers(t, facts, render(t, x), cases) {
						t.Error(p)
					}
				})
			}
		}
	}
}

// plant returns objs with old replaced by new in the JSON of every object
// of kind, failing when old is not there.
func plant(t *testing.T, objs []obj, kind, old, new string) []obj {
	t.Helper()
	b, err := json.Marshal(objs)
	if err != nil {
		t.Fatal(err)
	}
	var out []obj
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	n := 0
	for i, o := range out {
		if o["kind"] != kind {
			continue
		}
		ob, _ := json.Marshal(o)
		s := string(ob)
		n += strings.Count(s, old)
		var x obj
		if err := json.Unmarshal([]byte(strings.ReplaceAll(s, old, new)), &x); err != nil {
			t.Fatal(err)
		}
		out[i] = x
	}
	if n == 0 {
		t.Fatalf("nothing to plant: %q is not in a %s", old, kind)
	}
	return out
}

// TestEvaluationCatchesPlantedFaults: a rendered query with a metric or
// label name a release does not export, or a wrong threshold, fails the
// evaluation (each fault is one string changed in what the function
// rendered).
func TestEvaluationCatchesPlantedFaults(t *testing.T) {
	facts := metricFacts(t)
	newest, oldest := upstream.VLLMNewest, upstream.VLLMOldest
	routerNew := routingLayer{"router", upstream.RouterNewest}
	llmdNew := routingLayer{"llm-d", upstream.PickerNewest["llm-d"]}
	gaieNew := routingLayer{"gaie", upstream.PickerNewest["gaie"]}
	quote := func(s string) string { b, _ := json.Marshal(s); return strings.Trim(string(b), `"`) }
	for _, f := range []struct {
		name          string
		objs          []obj
		kind          string
		old, new      string
		alerts        bool
		cases         []triggerCase
		r             routingLayer
		wantInProblem string
	}{
		{name: "the KV-cache gauge vLLM 0.27.1 no longer exports", objs: render(t, xr(newest, routerNew)), kind: "PrometheusRule",
			old: "vllm:kv_cache_usage_perc", new: "vllm:gpu_cache_usage_perc", alerts: true, r: routerNew, wantInProblem: "KV cache nearly full"},
		{name: "the KV-cache gauge vLLM 0.8.3 does not export yet", objs: render(t, xr(oldest, routerNew)), kind: "PrometheusRule",
			old: "vllm:gpu_cache_usage_perc", new: "vllm:kv_cache_usage_perc", alerts: true, r: routerNew, wantInProblem: "KV cache nearly full"},
		{name: "the router's label for vLLM's model_name", objs: render(t, xr(newest, routerNew)), kind: "PrometheusRule",
			old: "model_name", new: "model", alerts: true, r: routerNew, wantInProblem: "grow over the bound"},
		{name: "a threshold of 100 waiting requests", objs: render(t, xr(newest, llmdNew)), kind: "PrometheusRule",
			old: "\\u003e 10 and", new: "\\u003e 100 and", alerts: true, r: llmdNew, wantInProblem: "grow over the bound"},
		{name: "the engines' gauge for absent()", objs: render(t, xr(newest, gaieNew)), kind: "PrometheusRule",
			old: "absent(vllm:num_requests_running", new: "absent(vllm:num_requests_waiting_total", alerts: true, r: gaieNew, wantInProblem: "model a down"},
		{name: "the queue gauge without the llm_d_epp_ prefix's family", objs: render(t, scaled(newest, llmdNew, "scaleToZero", scaleToZero)), kind: "ScaledObject",
			old: "llm_d_epp_flow_control_queue_size", new: "llm_d_epp_flow_control_queue_depth", cases: zeroPickerCases, wantInProblem: "the picker holds requests"},
		{name: "the pool label of the queue gauge", objs: render(t, scaled(newest, gaieNew, "scaleToZero", scaleToZero)), kind: "ScaledObject",
			old: "inference_pool=", new: "name=", cases: zeroPickerCases, wantInProblem: "the picker holds requests"},
		{name: "the router's counter as Python names it", objs: render(t, scaled(newest, routerNew, "scaleToZero", scaleToZero)), kind: "ScaledObject",
			old: "vllm:num_incoming_requests_total", new: "vllm:num_incoming_requests", cases: zeroRouterCases, wantInProblem: "a request comes"},
		{name: "the served name's label", objs: render(t, scaled(oldest, routerNew, "autoscaling", autoscaling)), kind: "ScaledObject",
			old: quote(`model_name="org/a"`), new: quote(`model="org/a"`), cases: autoscalingCases, wantInProblem: "summed over the model's pods"},
		{name: "the engines' Service for the picker's", objs: render(t, scaled(newest, llmdNew, "autoscaling", map[string]any{"signal": "pickerRunning", "maxReplicas": 4, "prometheusAddress": "http://p:9090"})), kind: "ScaledObject",
			old: `service=\"s-a-epp\"`, new: `service=\"s-a-engine-service\"`, cases: pickerRunningCases, wantInProblem: "in flight at the model's picker"},
		{name: "the model's name for the group's Service", objs: render(t, disaggregated(newest, routerNew)), kind: "ScaledObject",
			old: `service=\"s-a-prefill-engine-service\"`, new: `model_name=\"org/a\"`, cases: groupCases, wantInProblem: "each group's waiting requests"},
		{name: "the pool saturation gauge without flow_control_", objs: render(t, scaled(newest, llmdNew, "autoscaling", withBlock(autoscaling, "signal", "poolSaturation"))), kind: "ScaledObject",
			old: "llm_d_epp_flow_control_pool_saturation", new: "llm_d_epp_pool_saturation", cases: poolSaturationCases, wantInProblem: "the pool's saturation"},
		{name: "the pool label of the saturation gauge", objs: render(t, scaled(newest, gaieNew, "autoscaling", withBlock(autoscaling, "signal", "poolSaturation"))), kind: "ScaledObject",
			old: "inference_pool=", new: "name=", cases: poolSaturationCases, wantInProblem: "the pool's saturation"},
		{name: "one of several triggers on the engines' Service for the picker's", objs: render(t, scaled(newest, llmdNew, "autoscaling", withBlock(autoscaling, "triggers", severalTriggers))), kind: "ScaledObject",
			old: `service=\"s-a-epp\"`, new: `service=\"s-a-engine-service\"`, cases: severalTriggersCases, wantInProblem: "each trigger its own signal"},
		{name: "the picker queue alert on the gauge's old llm-d name", objs: render(t, xr(newest, llmdNew)), kind: "PrometheusRule",
			old: "llm_d_epp_flow_control_queue_size", new: "llm_d_epp_flow_control_queue_depth", alerts: true, r: llmdNew, wantInProblem: "the picker's queue grows over the bound"},
		{name: "the picker queue alert at 100 held requests", objs: render(t, xr(newest, gaieNew)), kind: "PrometheusRule",
			old: "\\u003e 10 and on (namespace, service, inference_pool)", new: "\\u003e 100 and on (namespace, service, inference_pool)", alerts: true, r: gaieNew, wantInProblem: "the picker's queue grows over the bound"},
		{name: "no sum over the model's pods", objs: render(t, scaled(newest, routerNew, "autoscaling", autoscaling)), kind: "ScaledObject",
			old: "sum(vllm:num_requests_waiting", new: "max(vllm:num_requests_waiting", cases: autoscalingCases, wantInProblem: "summed over the model's pods"},
	} {
		t.Run(f.name, func(t *testing.T) {
			objs := plant(t, f.objs, f.kind, f.old, f.new)
			var problems []string
			if f.alerts {
				problems = checkAlerts(t, facts, objs, f.r)
			} else {
				problems = checkTriggers(t, facts, objs, f.cases)
			}
			if len(problems) == 0 {
				t.Fatalf("no case fails with %q in place of %q", f.new, f.old)
			}
			if !strings.Contains(strings.Join(problems, "\n"), f.wantInProblem) {
				t.Errorf("the cases fail, but not %q: %q", f.wantInProblem, problems)
			}
		})
	}
}
