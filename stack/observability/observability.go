// Package observability builds a stack's Grafana dashboard (a ConfigMap in
// the shape Grafana's dashboard sidecar loads) and its Prometheus Operator
// PrometheusRule of alerts, from one description of panels and alerts
// (Panels, Alerts) that names each metric through the release of the
// program that exports it: a release that lacks a metric gets the name it
// exports instead, or no panel or alert. It takes plain values (names,
// Services, releases) and knows nothing of the ProductionStack: the stack
// package reads the spec and decides. Every metric name traces to
// ../testdata/upstream/metrics.tsv, with citations; the contract tests hold
// the description to it release by release.
//
// Queries select the stack's series by the labels the Prometheus Operator
// gives every target a ServiceMonitor scrapes (namespace and service: the
// Service's namespace and name; prometheus-operator's
// pkg/prometheus/promcfg.go relabels __meta_kubernetes_namespace to
// namespace and __meta_kubernetes_service_name to service for every
// ServiceMonitor endpoint) and group by the metric's own labels
// (vLLM's model_name, the router's model and server, the picker's pool
// name): the router's gauges share names with vLLM's, and only the service
// label tells them apart.
package observability

import (
	"fmt"
	"slices"
	"strings"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// The programs whose metrics the description names, as metrics.tsv names
// its components: vLLM, the production-stack router, and the two endpoint
// pickers (upstream.PickerGAIE, upstream.PickerLLMD).
const (
	VLLM   = "vllm"
	Router = "router"
	GAIE   = upstream.PickerGAIE
	LLMD   = upstream.PickerLLMD
)

// A Release is one release of one program.
type Release struct {
	Program string
	Version upstream.Version
}

func (r Release) String() string { return r.Program + " " + r.Version.String() }

// A Variant is what a panel or an alert queries from a release of its
// program on: the metric and the expressions that use it. {M} in an
// expression stands for the metric's series of the selected Services
// (name{namespace="…",service=~"…"}), {M_bucket} for its histogram
// buckets; {T} in an alert's expression for its threshold. A Variant with
// no Metric leaves the panel or alert out from its release on.
type Variant struct {
	Since   upstream.Version
	Metric  string
	Queries []Query
}

// A Query is one expression of a panel, with the legend of its series.
type Query struct {
	Expr   string
	Legend string
}

// A Panel is one time series of the dashboard.
type Panel struct {
	Row         string // the dashboard row it is in
	Title       string
	Description string
	Unit        string // Grafana's unit id
	// Programs is the program whose metric the panel queries: VLLM,
	// Router, or both pickers (the same variants by release of either).
	Programs []string
	Variants map[string][]Variant // by program
	// Feature, if set, limits the panel to the Sources that run it: a
	// panel of what only some engines do stays off the others' dashboards.
	Feature string
}

// An Alert is one alerting rule.
type Alert struct {
	Name     string
	Severity string
	Summary  string
	// Threshold says what {T} is, for the reference.
	Threshold string
	// PerService makes one rule per selected Service instead of one over
	// all of them: absent() reports a missing series only for the labels of
	// its selector's equality matchers.
	PerService bool
	Programs   []string
	Variants   map[string][]Variant
}

// The rows of the dashboard.
const (
	RowEngines = "Engines (vLLM)"
	RowRouter  = "Router"
	RowPicker  = "Endpoint pickers"
)

// A histogram's quantile over five minutes, by the labels in by.
func quantile(q, by string) string {
	return fmt.Sprintf("histogram_quantile(%s, sum by (%s, le) (rate({M_bucket}[5m])))", q, by)
}

// engine gives one variant from vLLM 0.8.3 for a metric every supported
// release exports under one name.
func engine(metric string, qs ...Query) map[string][]Variant {
	return map[string][]Variant{VLLM: {{Since: upstream.VLLMOldest, Metric: metric, Queries: qs}}}
}

// vLLM's renames (metrics.tsv): the KV-cache gauge every engine exports
// is vllm:gpu_cache_usage_perc up to 0.10.x (the V0 engine never exports
// the new name; V1 exports both from 0.9.2) and vllm:kv_cache_usage_perc
// from 0.11.0 (the old one hidden, then gone in 0.12.0); the inter-token
// histogram is vllm:time_per_output_token_seconds up to 0.10.x and
// vllm:inter_token_latency_seconds from 0.11.0 (TPOT hidden from 0.12.0).
var (
	vllmRenamesAt     = upstream.V(0, 11, 0)
	pickerLLMDRenames = upstream.V(0, 9, 0)
)

func renamed(old, new string, qs ...Query) map[string][]Variant {
	return map[string][]Variant{VLLM: {
		{Since: upstream.VLLMOldest, Metric: old, Queries: qs},
		{Since: vllmRenamesAt, Metric: new, Queries: qs},
	}}
}

// picker gives the variants of a pool gauge: inference_pool_<gaie> in
// every GAIE release and llm-d before v0.9.0; llm_d_epp_<llmd> from llm-d
// v0.9.0, which deprecates the old name.
func picker(gaie, llmd string, qs ...Query) map[string][]Variant {
	return map[string][]Variant{
		GAIE: {{Since: upstream.PickerOldest[GAIE], Metric: "inference_pool_" + gaie, Queries: qs}},
		LLMD: {
			{Since: upstream.PickerOldest[LLMD], Metric: "inference_pool_" + gaie, Queries: qs},
			{Since: pickerLLMDRenames, Metric: "llm_d_epp_" + llmd, Queries: qs},
		},
	}
}

var (
	engines = []string{VLLM}
	routers = []string{Router}
	pickers = []string{GAIE, LLMD}
)

// Router releases (metrics.tsv): vllm:num_incoming_requests_total from
// 0.1.8, vllm:request_errors_total from 0.1.10, the latency histogram from
// 0.1.11; vllm:healthy_pods_total drops the engines the router no longer
// discovers from 0.1.12 (before, their series keep their last value).
var (
	routerIncoming   = upstream.V(0, 1, 8)
	routerErrors     = upstream.V(0, 1, 10)
	routerHistogram  = upstream.V(0, 1, 11)
	routerClearsGone = upstream.V(0, 1, 12)
)

// Panels is the dashboard, in order.
var Panels = []Panel{
	{Row: RowEngines, Title: "Requests running", Unit: "short", Programs: engines,
		Description: "Requests in the engines' running batches, by model.",
		Variants:    engine("vllm:num_requests_running", Query{"sum by (model_name) ({M})", "{{model_name}}"})},
	{Row: RowEngines, Title: "Requests waiting", Unit: "short", Programs: engines,
		Description: "Requests queued in the engines, waiting for a batch slot, by model.",
		Variants:    engine("vllm:num_requests_waiting", Query{"sum by (model_name) ({M})", "{{model_name}}"})},
	{Row: RowEngines, Title: "KV-cache usage", Unit: "percentunit", Programs: engines,
		Description: "The fullest engine's KV-cache usage (0 to 1), by model.",
		Variants:    renamed("vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc", Query{"max by (model_name) ({M})", "{{model_name}}"})},
	{Row: RowEngines, Title: "Time to first token", Unit: "s", Programs: engines,
		Description: "Median and 95th percentile of the time to the first token over 5 minutes, by model.",
		Variants: engine("vllm:time_to_first_token_seconds",
			Query{quantile("0.5", "model_name"), "{{model_name}} p50"},
			Query{quantile("0.95", "model_name"), "{{model_name}} p95"})},
	{Row: RowEngines, Title: "Inter-token latency", Unit: "s", Programs: engines,
		Description: "Median and 95th percentile of the time between output tokens over 5 minutes, by model.",
		Variants: renamed("vllm:time_per_output_token_seconds", "vllm:inter_token_latency_seconds",
			Query{quantile("0.5", "model_name"), "{{model_name}} p50"},
			Query{quantile("0.95", "model_name"), "{{model_name}} p95"})},
	{Row: RowEngines, Title: "Prompt tokens per second", Unit: "short", Programs: engines,
		Description: "Prompt (prefill) tokens processed per second, by model.",
		Variants:    engine("vllm:prompt_tokens_total", Query{"sum by (model_name) (rate({M}[5m]))", "{{model_name}}"})},
	{Row: RowEngines, Title: "Generation tokens per second", Unit: "short", Programs: engines,
		Description: "Output tokens generated per second, by model.",
		Variants:    engine("vllm:generation_tokens_total", Query{"sum by (model_name) (rate({M}[5m]))", "{{model_name}}"})},
	{Row: RowEngines, Title: "Finished requests per second", Unit: "reqps", Programs: engines,
		Description: "Requests the engines finished per second, by model and reason (stop, length, abort).",
		Variants:    engine("vllm:request_success_total", Query{"sum by (model_name, finished_reason) (rate({M}[5m]))", "{{model_name}} {{finished_reason}}"})},
	{Row: RowEngines, Title: "Preemptions per second", Unit: "short", Programs: engines,
		Description: "Requests preempted per second to free KV cache, by model: a sign the cache is too small for the load.",
		Variants:    engine("vllm:num_preemptions_total", Query{"sum by (model_name) (rate({M}[5m]))", "{{model_name}}"})},
	{Row: RowEngines, Title: "Prefix-cache hit rate", Unit: "percentunit", Programs: engines,
		Description: "Share of the prompt tokens looked up in the engines' own (GPU) prefix cache that were found there, over 5 minutes, by model (vLLM 0.11.0 and later). Precise prefix-cache routing (inferenceExtension.picker.prefixCache) should raise it.",
		Variants:    hitRate(vllmRenamesAt, "vllm:prefix_cache")},
	{Row: RowEngines, Title: "KV connector hit rate", Unit: "percentunit", Programs: engines, Feature: FeatureKVConnector,
		Description: "Share of the prompt tokens looked up in a KV connector (vLLM's KV offload tiers, LMCache) that it held, over 5 minutes, by model (vLLM 0.11.1 and later).",
		Variants:    hitRate(vllmExternalPrefixCache, "vllm:external_prefix_cache")},
	{Row: RowEngines, Title: "KV offload transfers", Unit: "Bps", Programs: engines, Feature: FeatureKVOffload,
		Description: "Bytes per second the KV offload tiers store from the GPU (GPU_to_CPU) and load back into it (CPU_to_GPU), by model (vLLM 0.16.0 and later).",
		Variants: map[string][]Variant{VLLM: {
			{Since: upstream.VLLMOldest},
			{Since: upstream.VLLMKVOffloadCPUTierSince, Metric: "vllm:kv_offload_total_bytes_total", Queries: []Query{
				{"sum by (model_name, transfer_type) (rate({M}[5m]))", "{{model_name}} {{transfer_type}}"}}},
		}}},

	{Row: RowRouter, Title: "Requests per model", Unit: "reqps", Programs: routers,
		Description: "Requests the router received per second, by model, also those no engine could take.",
		Variants: map[string][]Variant{Router: {
			{Since: upstream.RouterOldest},
			{Since: routerIncoming, Metric: "vllm:num_incoming_requests_total", Queries: []Query{{"sum by (model) (rate({M}[5m]))", "{{model}}"}}},
		}}},
	{Row: RowRouter, Title: "Requests per engine", Unit: "reqps", Programs: routers,
		Description: "The router's requests per second to each engine it routes to (its own moving estimate).",
		Variants: map[string][]Variant{Router: {
			{Since: upstream.RouterOldest, Metric: "vllm:current_qps", Queries: []Query{{"sum by (server) ({M})", "{{server}}"}}},
		}}},
	{Row: RowRouter, Title: "Router latency", Unit: "s", Programs: routers,
		Description: "End-to-end latency at the router: the 95th percentile by model from router 0.1.11, the router's average by engine before.",
		Variants: map[string][]Variant{Router: {
			{Since: upstream.RouterOldest, Metric: "vllm:avg_latency", Queries: []Query{{"max by (server) ({M})", "{{server}} average"}}},
			{Since: routerHistogram, Metric: "vllm:request_latency_seconds", Queries: []Query{{quantile("0.95", "model"), "{{model}} p95"}}},
		}}},
	{Row: RowRouter, Title: "Router errors per second", Unit: "short", Programs: routers,
		Description: "Requests the router failed per second, by model and error type.",
		Variants: map[string][]Variant{Router: {
			{Since: upstream.RouterOldest},
			{Since: routerErrors, Metric: "vllm:request_errors_total", Queries: []Query{{"sum by (model, error_type) (rate({M}[5m]))", "{{model}} {{error_type}}"}}},
		}}},
	{Row: RowRouter, Title: "Engines discovered", Unit: "short", Programs: routers,
		Description: "Engines the router discovers, and those of them it sees healthy (before router 0.1.12 an engine that went away keeps its last value).",
		Variants: map[string][]Variant{Router: {
			{Since: upstream.RouterOldest, Metric: "vllm:healthy_pods_total", Queries: []Query{
				{"count by (service) ({M})", "discovered"},
				{"sum by (service) ({M})", "healthy"},
			}},
		}}},

	{Row: RowPicker, Title: "Ready endpoints", Unit: "short", Programs: pickers,
		Description: "Engines ready in each model's InferencePool, as its endpoint picker sees them.",
		Variants:    picker("ready_pods", "ready_endpoints", Query{"sum by (name) ({M})", "{{name}}"})},
	{Row: RowPicker, Title: "Pool KV-cache utilisation", Unit: "percentunit", Programs: pickers,
		Description: "The average KV-cache utilisation (0 to 1) the picker reads from each pool's engines.",
		Variants:    picker("average_kv_cache_utilization", "average_kv_cache_utilization", Query{"max by (name) ({M})", "{{name}}"})},
	{Row: RowPicker, Title: "Pool queue size", Unit: "short", Programs: pickers,
		Description: "The average number of requests waiting in each pool's engines, as the picker reads them.",
		Variants:    picker("average_queue_size", "average_queue_size", Query{"max by (name) ({M})", "{{name}}"})},
}

// Alerts are the rules of the PrometheusRule, in order. Every rule's
// labels carry its severity; its annotations a summary.
var Alerts = []Alert{
	{Name: "VLLMModelNoReadyEngine", Severity: "critical", PerService: true, Programs: engines,
		Summary:  "No engine of a model serves metrics: none is ready (an engine answers /metrics once its API server is up), or none is scraped. One rule per model, except models that may run no engine on purpose (replicas 0, scaleToZero, a KEDA autoscaler idle at 0).",
		Variants: engine("vllm:num_requests_running", Query{Expr: "absent({M})"})},
	{Name: "VLLMRequestsWaitingGrowing", Severity: "warning", Programs: engines,
		Summary:   "An engine of a model holds more waiting requests than the threshold, and the model's queue grew over the last 10 minutes.",
		Threshold: "waitingRequests (default 10)",
		Variants: engine("vllm:num_requests_waiting", Query{Expr: "max by (namespace, service, model_name) ({M}) > {T} and on (namespace, service, model_name) " +
			"deriv(sum by (namespace, service, model_name) ({M})[10m:1m]) > 0"})},
	{Name: "VLLMKVCacheNearlyFull", Severity: "warning", Programs: engines,
		Summary:   "An engine's KV cache is fuller than the threshold: new requests wait or preempt others.",
		Threshold: "kvCacheUsagePercent / 100 (default 0.9)",
		Variants:  renamed("vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc", Query{Expr: "max by (namespace, service, model_name) ({M}) > {T}"})},
	{Name: "VLLMPickerQueueGrowing", Severity: "warning", Programs: pickers,
		Summary:   "An endpoint picker's flow control holds more requests for its pool than the threshold, and the queue grew over the last 10 minutes: the pool is saturated (or has no ready endpoint) and requests wait at the picker. The queue is kept only while flow control is on (scaleToZero, autoscaling on poolSaturation); otherwise the gauge has no series and the alert stays quiet.",
		Threshold: "waitingRequests (default 10)",
		Variants: map[string][]Variant{
			GAIE: {{Since: upstream.PickerOldest[GAIE], Metric: "inference_extension_flow_control_queue_size", Queries: []Query{{Expr: pickerQueueGrowing}}}},
			LLMD: {
				{Since: upstream.PickerOldest[LLMD], Metric: "inference_extension_flow_control_queue_size", Queries: []Query{{Expr: pickerQueueGrowing}}},
				{Since: pickerLLMDRenames, Metric: "llm_d_epp_flow_control_queue_size", Queries: []Query{{Expr: pickerQueueGrowing}}},
			},
		}},
	{Name: "VLLMRouterNoEngines", Severity: "critical", Programs: routers,
		Summary: "The router discovers no healthy engine (or is not scraped): every request fails. Only from router 0.1.12, the first that forgets an engine that went away.",
		Variants: map[string][]Variant{Router: {
			{Since: upstream.RouterOldest},
			{Since: routerClearsGone, Metric: "vllm:healthy_pods_total", Queries: []Query{{Expr: "sum by (namespace, service) ({M}) == 0 or absent({M})"}}},
		}}},
}

// pickerQueueGrowing is the picker's flow-control queue of a pool over
// the threshold and growing: the gauge has a series per fairness ID,
// priority and model name (metrics.tsv), summed per picker Service and
// pool (its replicas' queues together).
const pickerQueueGrowing = "sum by (namespace, service, inference_pool) ({M}) > {T} and on (namespace, service, inference_pool) " +
	"deriv(sum by (namespace, service, inference_pool) ({M})[10m:1m]) > 0"

// variant is the variant of vs for release v: the last whose Since v is
// at least; ok false before the first.
func variant(vs []Variant, v upstream.Version) (Variant, bool) {
	var out Variant
	ok := false
	for _, x := range vs {
		if v.AtLeast(x.Since) {
			out, ok = x, true
		}
	}
	return out, ok && out.Metric != ""
}

// MetricOf is the metric a panel or an alert's variants query at release
// r, "" when they query none.
func MetricOf(variants map[string][]Variant, r Release) string {
	x, ok := variant(variants[r.Program], r.Version)
	if !ok {
		return ""
	}
	return x.Metric
}

// A Source is one Service whose series a query selects: an engine's, the
// router's or a picker's, with the release of the program behind it.
type Source struct {
	Service string
	Release Release
	// Model is the model the Service serves ("" for the router), for the
	// labels of a per-Service rule.
	Model string
	// Features are what the program runs that panels of a Feature need
	// (FeatureKVConnector, FeatureKVOffload).
	Features []string
}

// A Rendered query is an expression over the Services whose releases
// export one metric name: what a panel shows or an alert evaluates.
type Rendered struct {
	Expr, Legend string
	Metric       string
}

// render renders a panel's or an alert's queries over sources: one
// expression per metric name, selecting the Services whose release
// exports that name, in the order of sources. threshold replaces {T}.
func render(namespace string, variants map[string][]Variant, sources []Source, threshold string) []Rendered {
	type group struct {
		x        Variant
		services []string
	}
	var groups []*group
	for _, s := range sources {
		x, ok := variant(variants[s.Release.Program], s.Release.Version)
		if !ok {
			continue
		}
		i := slices.IndexFunc(groups, func(g *group) bool { return g.x.Metric == x.Metric && slices.Equal(g.x.Queries, x.Queries) })
		if i < 0 {
			groups = append(groups, &group{x: x})
			i = len(groups) - 1
		}
		g := groups[i]
		if !slices.Contains(g.services, s.Service) {
			g.services = append(g.services, s.Service)
		}
	}
	var out []Rendered
	for _, g := range groups {
		sel := Selector(namespace, g.services)
		for _, q := range g.x.Queries {
			e := expand(q.Expr, g.x.Metric, sel, threshold)
			out = append(out, Rendered{Expr: e, Legend: q.Legend, Metric: g.x.Metric})
		}
	}
	return out
}

// expand writes a query template over metric and selector sel: {M} is the
// metric's series, {M_bucket} its histogram's buckets, {S} the selector
// alone (for a second metric of the same Services, such as a ratio's
// denominator), {T} the threshold.
func expand(expr, metric, sel, threshold string) string {
	return strings.NewReplacer("{M_bucket}", metric+"_bucket"+sel, "{M}", metric+sel, "{S}", sel, "{T}", threshold).Replace(expr)
}

// Selector selects the series of the Services of namespace: the labels the
// Prometheus Operator gives what a ServiceMonitor scrapes. Service names
// are DNS labels, with nothing a regular expression would read as more
// than itself.
func Selector(namespace string, services []string) string {
	if len(services) == 1 {
		return fmt.Sprintf(`{namespace=%q,service=%q}`, namespace, services[0])
	}
	return fmt.Sprintf(`{namespace=%q,service=~%q}`, namespace, strings.Join(services, "|"))
}

// A Target is what one stack runs, for its dashboard and alerts.
type Target struct {
	Namespace string
	Name      string // the stack's
	Engines   []Source
	Router    *Source  // nil with the inference extension
	Pickers   []Source // one per model with the inference extension
	// NoEngineAlert are the engine Services of models that always run an
	// engine; a model that scales to zero has no VLLMModelNoReadyEngine.
	NoEngineAlert []string
}

// Features of a Source that panels may need.
const (
	// FeatureKVConnector: the engine runs a KV connector that finds
	// prefixes beyond its GPU (LMCache, vLLM's KV offload tiers).
	FeatureKVConnector = "kv-connector"
	// FeatureKVOffload: the engine runs vLLM's own KV offload tiers.
	FeatureKVOffload = "kv-offload"
)

// vllmExternalPrefixCache: vLLM counts a KV connector's prefix hits from
// 0.11.1 (metrics.tsv).
var vllmExternalPrefixCache = upstream.V(0, 11, 1)

// hitRate is the share of an engine's <counters>_queries_total that were
// <counters>_hits_total, by model, from release since (none before).
func hitRate(since upstream.Version, counters string) map[string][]Variant {
	return map[string][]Variant{VLLM: {
		{Since: upstream.VLLMOldest},
		{Since: since, Metric: counters + "_hits_total", Queries: []Query{
			{"sum by (model_name) (rate({M}[5m])) / sum by (model_name) (rate(" + counters + "_queries_total{S}[5m]))", "{{model_name}}"}}},
	}}
}

// withFeature are the sources that run feature ("": all of them).
func withFeature(sources []Source, feature string) []Source {
	if feature == "" {
		return sources
	}
	return slices.DeleteFunc(slices.Clone(sources), func(s Source) bool { return !slices.Contains(s.Features, feature) })
}

// sources are the Services of t that run one of programs.
func (t Target) sources(programs []string) []Source {
	var out []Source
	all := slices.Concat(t.Engines, t.Pickers)
	if t.Router != nil {
		all = append(all, *t.Router)
	}
	for _, s := range all {
		if slices.Contains(programs, s.Release.Program) {
			out = append(out, s)
		}
	}
	return out
}
