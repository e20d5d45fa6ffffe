package upstream

import "strings"

// What the function knows of the Gateway API Inference Extension's endpoint
// picker (EPP) by release: its flags in epp-flags.tsv and the rest in
// GAIE.md of ../stack/testdata/upstream, with citations. Two programs carry
// the picker: the inference extension's own cmd/epp (GAIE, v1.0.0 to v1.5.0,
// its last; v1.6.0 keeps only a lightweight picker for conformance) and
// llm-d's (llm-d/llm-d-router, v0.6.0 on), which took it over.
const (
	PickerGAIE = "gaie"
	PickerLLMD = "llm-d"

	// The pickers' images.
	GAIEPickerImage = "registry.k8s.io/gateway-api-inference-extension/epp"
	LLMDPickerImage = "ghcr.io/llm-d/llm-d-router-endpoint-picker"
)

// A PickerRelease is one release of one of the two pickers.
type PickerRelease struct {
	Kind    string // PickerGAIE or PickerLLMD
	Version Version
}

func (r PickerRelease) String() string { return r.Kind + " " + r.Version.String() }

// AtLeast reports whether r is release v of its kind or later.
func (r PickerRelease) AtLeast(v Version) bool { return r.Version.AtLeast(v) }

// The releases the function renders for, by kind: the oldest and newest it
// knows. GAIE's pickers before v1.3.0 watch InferenceObjectives whether or
// not their CRD is served (GAIE.md §d), so they cannot start on a cluster
// without it, which the stack does not install.
var (
	PickerOldest = map[string]Version{PickerGAIE: V(1, 3, 0), PickerLLMD: V(0, 6, 0)}
	PickerNewest = map[string]Version{PickerGAIE: V(1, 5, 0), PickerLLMD: V(0, 10, 0)}

	// DefaultPicker is the picker a stack runs unless it names another:
	// llm-d's, maintained, at the newest release the facts cover.
	DefaultPicker = PickerRelease{PickerLLMD, V(0, 10, 0)}
)

// PickerKindOf is the picker an image repository carries, "" for one the
// function does not recognise.
func PickerKindOf(repo string) string {
	switch {
	case repo == GAIEPickerImage || strings.HasSuffix(repo, "gateway-api-inference-extension/epp"):
		return PickerGAIE
	case repo == LLMDPickerImage || strings.HasSuffix(repo, "/llm-d-router-endpoint-picker"), strings.HasSuffix(repo, "/llm-d-inference-scheduler"):
		return PickerLLMD
	}
	return ""
}

// PickerConfigAPIVersion is the apiVersion of the EndpointPickerConfig a
// release reads: llm-d moved it to its own group at v0.9.0 (the old one
// still decodes there, with a deprecation line in the log).
func PickerConfigAPIVersion(r PickerRelease) string {
	if r.Kind == PickerLLMD && r.AtLeast(V(0, 9, 0)) {
		return "llm-d.ai/v1alpha1"
	}
	return "inference.networking.x-k8s.io/v1alpha1"
}

// PickerDataLayer reports whether a release reads engine metrics through
// its data layer plugins (metrics-data-source, core-metrics-extractor),
// enabled by default and part of its default configuration: GAIE v1.5.0,
// and llm-d from v0.8.0 (GAIE v1.5.0's runner, then its own copy).
func PickerDataLayer(r PickerRelease) bool {
	if r.Kind == PickerGAIE {
		return r.AtLeast(V(1, 5, 0))
	}
	return r.AtLeast(V(0, 8, 0))
}

// PickerRefusesMetricFlags reports whether a release exits at start when
// any of its engine-metric name flags (--kv-cache-usage-percentage-metric
// and the four others) is set on its command line: its options' Validate
// refuses each one explicitly set, "flag %q is deprecated and cannot be
// used; configure metrics via engineConfigs in EndpointPickerConfig
// instead" (GAIE@v1.4.0:pkg/epp/server/options.go:239-251, run by
// cmd/epp/runner/runner.go:159; GAIE v1.5.0 options.go:228-240; llm-d
// v0.7.0 and v0.8.0 run GAIE v1.4.0's and v1.5.0's runner,
// LLMD@v0.9.0:pkg/epp/server/options.go:41-47,301-306 its own; epp-validation.tsv).
func PickerRefusesMetricFlags(r PickerRelease) bool {
	if r.Kind == PickerGAIE {
		return r.AtLeast(V(1, 4, 0))
	}
	return r.AtLeast(V(0, 7, 0))
}

// PickerDataLayerGate is the feature gate that turns the data layer on in
// the releases where it is experimental (GAIE v1.3.x, v1.4.x; llm-d v0.6.x,
// v0.7.x): ExperimentalDatalayerFeatureGate "dataLayer"
// (GAIE@v1.4.0:pkg/epp/datalayer/factory.go:31). With it the picker reads
// engine metrics through the configuration's data layer
// (cmd/epp/runner/runner.go:319-320,591-636) instead of the flags.
const PickerDataLayerGate = "dataLayer"

// PickerMetricsExtractor is the type of the data layer plugin that reads an
// engine's metrics by its engineConfigs: model-server-protocol-metrics up to
// GAIE v1.4.x (GAIE@v1.4.0:pkg/epp/framework/plugins/datalayer/extractor/metrics/factories.go:28),
// core-metrics-extractor from GAIE v1.5.0 and llm-d v0.8.0.
func PickerMetricsExtractor(r PickerRelease) string {
	if PickerDataLayer(r) {
		return "core-metrics-extractor"
	}
	return "model-server-protocol-metrics"
}

// PickerDataLayerKey is the configuration's key of the data layer's sources:
// data up to GAIE v1.4.x (GAIE@v1.4.0:apix/config/v1alpha1/endpointpickerconfig_types.go:58),
// dataLayer from GAIE v1.5.0 (l.59) and llm-d v0.8.0.
func PickerDataLayerKey(r PickerRelease) string {
	if PickerDataLayer(r) {
		return "dataLayer"
	}
	return "data"
}

// PickerKVCacheMetric is the engine metric a release reads for KV-cache
// utilisation by default: GAIE's before v1.3.0 vLLM's old name, every later
// release the new one (--kv-cache-usage-percentage-metric sets another in
// every release, deprecated from GAIE v1.4.0 and llm-d v0.7.0).
func PickerKVCacheMetric(r PickerRelease) string {
	if r.Kind == PickerGAIE && r.Version.Less(V(1, 3, 0)) {
		return VLLMKVCacheMetricOld
	}
	return VLLMKVCacheMetric
}

// PickerFlowControlGate is the feature gate that turns the picker's flow
// control on, in featureGates[] of its configuration (GAIE v1.2.0+, llm-d;
// off by default in every release, GAIE.md §g).
const PickerFlowControlGate = "flowControl"

// PickerFlowControl reports whether the release takes a flowControl
// section with defaultRequestTTL in its configuration: GAIE v1.4.0+, llm-d
// v0.7.0+ (GAIE v1.4.0's runner); earlier ones set no TTL (GAIE.md §g).
func PickerFlowControl(r PickerRelease) bool {
	if r.Kind == PickerGAIE {
		return r.AtLeast(V(1, 4, 0))
	}
	return r.AtLeast(V(0, 7, 0))
}

// PickerQueueMetric is the gauge of the requests the picker's flow control
// holds, with labels fairness_id, priority, inference_pool, model_name and
// target_model_name: llm-d v0.9.0+ name it llm_d_epp_… (the old name stays,
// deprecated), GAIE.md §g.
func PickerQueueMetric(r PickerRelease) string {
	if r.Kind == PickerLLMD && r.AtLeast(V(0, 9, 0)) {
		return "llm_d_epp_flow_control_queue_size"
	}
	return "inference_extension_flow_control_queue_size"
}

// PickerRunningMetric is the gauge of the requests the picker has in flight
// for a model (incremented when it picks an endpoint, decremented when the
// response ends), the model's load as the picker sees it: GAIE's
// inference_objective_running_requests{model_name} in every release (and
// llm-d's before v0.9.0, which run GAIE's code), llm_d_epp_request_running
// {model_name, target_model_name, fairness_id, priority} from llm-d v0.9.0,
// which deprecates the old name (metrics.tsv).
func PickerRunningMetric(r PickerRelease) string {
	if r.Kind == PickerLLMD && r.AtLeast(V(0, 9, 0)) {
		return "llm_d_epp_request_running"
	}
	return "inference_objective_running_requests"
}

// PickerObjectiveGroups are the API groups whose InferenceObjectives and
// InferenceModelRewrites a release watches when their CRDs are served: the
// inference extension's experimental group, and from llm-d v0.9.0 llm-d's
// own, which it prefers.
func PickerObjectiveGroups(r PickerRelease) []string {
	if r.Kind == PickerLLMD && r.AtLeast(V(0, 9, 0)) {
		return []string{"inference.networking.x-k8s.io", "llm-d.ai"}
	}
	return []string{"inference.networking.x-k8s.io"}
}

// A PickerObjective is how a release reads InferenceObjectives: the
// apiVersion of those it watches and the request header whose value names
// one (GAIE.md §h). Every release the function renders watches them (GAIE
// v1.3.0+ and llm-d, when their CRD is served at start) and looks an
// objective up by its name among those whose poolRef is its pool.
type PickerObjective struct {
	APIVersion string
	Header     string
	// OldHeader is a deprecated name the release still reads ("" when
	// none).
	OldHeader string
}

// PickerObjectiveOf is how release r reads InferenceObjectives: GAIE's
// experimental group and header up to llm-d v0.8.0 (GAIE's runner); from
// llm-d v0.9.0 its own group, which it prefers (with both CRDs served it
// ignores the other group's objectives), and header, the old one an alias.
func PickerObjectiveOf(r PickerRelease) PickerObjective {
	if r.Kind == PickerLLMD && r.AtLeast(V(0, 9, 0)) {
		return PickerObjective{APIVersion: "llm-d.ai/v1alpha2", Header: "x-llm-d-inference-objective", OldHeader: "x-gateway-inference-objective"}
	}
	return PickerObjective{APIVersion: "inference.networking.x-k8s.io/v1alpha2", Header: "x-gateway-inference-objective"}
}

// vLLM's metric of KV-cache utilisation (0 to 1): the old name up to 0.9.1,
// the new one from 0.9.2 (both up to 0.10.x; the old one hidden in 0.11.x
// and removed in 0.12.0) (GAIE.md §c, vllm/v1/metrics/loggers.py).
const (
	VLLMKVCacheMetricOld = "vllm:gpu_cache_usage_perc"
	VLLMKVCacheMetric    = "vllm:kv_cache_usage_perc"
)

var (
	vllmKVCacheMetricSince     = V(0, 9, 2)
	vllmKVCacheMetricOldHidden = V(0, 11, 0)
)

// VLLMKVCacheMetrics are the names of the KV-cache utilisation metric a vLLM
// release exports.
func VLLMKVCacheMetrics(v Version) []string {
	var out []string
	if v.Less(vllmKVCacheMetricOldHidden) {
		out = append(out, VLLMKVCacheMetricOld)
	}
	if v.AtLeast(vllmKVCacheMetricSince) {
		out = append(out, VLLMKVCacheMetric)
	}
	return out
}

// A disaggregated model behind llm-d's picker (GAIE.md, "P/D behind llm-d's
// picker"): one pool over the prefill and the decode pods, told apart by
// PickerRoleLabel; the picker runs a decode profile and a prefill profile
// for each request and names the chosen prefill endpoint to the decode pod
// in PickerPrefillHeader; the routing sidecar on the decode pod (in front of
// vLLM) sends the request to that prefill endpoint first, then to its vLLM
// with the KV-transfer parameters the prefill engine returned.
const (
	PickerRoleLabel     = "llm-d.ai/role"
	PickerRolePrefill   = "prefill"
	PickerRoleDecode    = "decode"
	PickerPrefillHeader = "x-prefiller-host-port"

	// The routing sidecar's image, published with each llm-d release
	// under the release's tag: renamed at v0.9.0.
	LLMDSidecarImage    = "ghcr.io/llm-d/llm-d-router-disagg-sidecar"
	LLMDSidecarImageOld = "ghcr.io/llm-d/llm-d-routing-sidecar"
)

// Releases of the P/D path: llm-d v0.7.0 is the first with the
// disagg-profile-handler (v0.6.0 has the pd-profile-handler, whose
// configuration and sidecar flags the function does not render); v0.9.0
// sets the prefill header from the profile handler (the headers handler
// deprecated); the sidecar's image is renamed at v0.9.0 and its
// --vllm-port becomes --model-server-port at v0.10.0.
var (
	PickerPDSince          = V(0, 7, 0)
	pickerPDHeadersUntil   = V(0, 9, 0)
	sidecarImageRenamedAt  = V(0, 9, 0)
	SidecarModelServerPort = V(0, 10, 0)
)

// PickerPD reports whether the release schedules a disaggregated model's
// prefill and decode itself with the configuration the function renders.
func PickerPD(r PickerRelease) bool { return r.Kind == PickerLLMD && r.AtLeast(PickerPDSince) }

// PickerPDHeadersHandler reports whether the release needs the
// disagg-headers-handler to send the prefill endpoint to the sidecar
// (v0.7.0, v0.8.0); later ones set it from the profile handler.
func PickerPDHeadersHandler(r PickerRelease) bool {
	return PickerPD(r) && r.Version.Less(pickerPDHeadersUntil)
}

// SidecarImageOf is the routing sidecar image llm-d published with a
// release.
func SidecarImageOf(v Version) string {
	if v.Less(sidecarImageRenamedAt) {
		return LLMDSidecarImageOld + ":v" + v.String()
	}
	return LLMDSidecarImage + ":v" + v.String()
}

// IsSidecarImage reports whether an image repository is llm-d's routing
// sidecar's (either name, or a mirror's under the same name).
func IsSidecarImage(repo string) bool {
	return repo == LLMDSidecarImage || repo == LLMDSidecarImageOld ||
		strings.HasSuffix(repo, "/llm-d-router-disagg-sidecar") || strings.HasSuffix(repo, "/llm-d-routing-sidecar")
}
