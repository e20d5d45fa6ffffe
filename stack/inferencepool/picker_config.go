package inferencepool

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// Args are the picker's arguments, every one --flag=value (Go's flag
// package): the pool it serves, its configuration, its ports; metrics
// without authentication (authenticating them needs a ClusterRole, which a
// namespaced stack cannot compose), no tracing (no collector is
// configured); leader election with more than one replica; the engines' KV
// metric where the picker's default is not theirs.
func Args(p Pool) []string {
	args := []string{
		"--pool-name=" + p.Name,
		"--pool-namespace=" + p.Namespace,
		"--pool-group=" + poolGroup,
		"--config-file=" + configDir + "/" + ConfigKey,
		"--grpc-port=" + strconv.Itoa(GRPCPort),
		"--grpc-health-port=" + strconv.Itoa(GRPCHealthPort),
		"--metrics-port=" + strconv.Itoa(MetricsPort),
		"--metrics-endpoint-auth=false",
		"--tracing=false",
	}
	if m := p.Picker.KVCacheMetric; m != "" && !kvMetricInConfig(p.Picker.Release, m) {
		// Only releases that accept the flag get it (GAIE v1.3.x, llm-d
		// v0.6.x); later ones refuse it set at all and take the metric in
		// the configuration (Config).
		args = append(args, "--kv-cache-usage-percentage-metric="+m)
	}
	if p.Picker.Replicas > 1 {
		args = append(args, "--ha-enable-leader-election=true")
	}
	return args
}

// kvMetricInConfig reports whether the configuration names the engines'
// KV-cache metric kvCacheMetric: in the releases whose data layer is on by
// default, and in those that refuse the metric flags but have the data layer
// behind its feature gate (GAIE v1.4.x, llm-d v0.7.x).
func kvMetricInConfig(r upstream.PickerRelease, kvCacheMetric string) bool {
	return kvCacheMetric != "" && (upstream.PickerDataLayer(r) || upstream.PickerRefusesMetricFlags(r))
}

// dataLayerOn reports whether the configuration has the data layer's
// metrics source and extractor: by default from GAIE v1.5.0 and llm-d
// v0.8.0; in the releases before, only to name the KV-cache metric, with
// the data layer's feature gate.
func dataLayerOn(r upstream.PickerRelease, kvCacheMetric string) bool {
	return upstream.PickerDataLayer(r) || kvMetricInConfig(r, kvCacheMetric)
}

// Config is the picker's EndpointPickerConfig: the three scorers the
// pickers' default configuration weighs (those of positive weight) in one
// profile, and from the releases whose metrics come from the data layer,
// its metrics source and extractor, as their default configuration has
// them, the extractor with the engines' KV-cache metric when it is not the
// picker's default (kvCacheMetric); where a release refuses the metric flag
// and has the data layer only behind its feature gate (GAIE v1.4.x, llm-d
// v0.7.x), that gate, source and extractor to name the metric; with ttlSeconds, flow control: its
// feature gate and the request TTL (GAIE.md §g; the releases that take a
// flowControl section, upstream.PickerFlowControl). Written by hand, in a
// fixed order, so it is the same bytes on every call.
func Config(r upstream.PickerRelease, w Weights, kvCacheMetric string, ttlSeconds int64) string {
	return config(r, w, kvCacheMetric, ttlSeconds, "", nil, []profile{{name: "default"}})
}

// A profile is a scheduling profile: its name and the filter before its
// scorers ("" none).
type profile struct{ name, filter string }

// config writes a configuration: the scorers, the plugins given (already
// YAML list items), the data layer plugins, then each profile with its
// filter and the scorers.
func config(r upstream.PickerRelease, w Weights, kvCacheMetric string, ttlSeconds int64, plugins string, precise *Precise, profiles []profile) string {
	scorers := []struct {
		name   string
		weight int32
	}{{"queue-scorer", w.Queue}, {"kv-cache-utilization-scorer", w.KVCacheUtilization}, {"prefix-cache-scorer", w.PrefixCache}}
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: %s\nkind: EndpointPickerConfig\nplugins:\n", upstream.PickerConfigAPIVersion(r))
	for _, s := range scorers {
		if s.weight > 0 {
			fmt.Fprintf(&b, "- type: %s\n", s.name)
			if s.name == "prefix-cache-scorer" && precise != nil {
				b.WriteString(precise.scorerParameters())
			}
		}
	}
	b.WriteString(plugins)
	if precise != nil {
		b.WriteString(precise.plugins())
	}
	dataLayer := dataLayerOn(r, kvCacheMetric)
	extractor := upstream.PickerMetricsExtractor(r)
	if dataLayer {
		fmt.Fprintf(&b, "- type: metrics-data-source\n- type: %s\n", extractor)
		if kvCacheMetric != "" {
			// The vllm engine's metrics, with the engines' KV-cache
			// metric: an engine config named vllm replaces the built-in
			// one, whose other names every vLLM release exports.
			fmt.Fprintf(&b, "  parameters:\n    engineConfigs:\n    - name: vllm\n      queuedRequestsSpec: vllm:num_requests_waiting\n"+
				"      runningRequestsSpec: vllm:num_requests_running\n      kvUsageSpec: %s\n      loraSpec: vllm:lora_requests_info\n"+
				"      cacheInfoSpec: vllm:cache_config_info\n", kvCacheMetric)
		}
	}
	b.WriteString("schedulingProfiles:\n")
	for _, p := range profiles {
		fmt.Fprintf(&b, "- name: %s\n  plugins:\n", p.name)
		if p.filter != "" {
			fmt.Fprintf(&b, "  - pluginRef: %s\n", p.filter)
		}
		for _, s := range scorers {
			if s.weight > 0 {
				fmt.Fprintf(&b, "  - pluginRef: %s\n    weight: %d\n", s.name, s.weight)
			}
		}
	}
	if dataLayer {
		fmt.Fprintf(&b, "%s:\n  sources:\n  - pluginRef: metrics-data-source\n    extractors:\n    - pluginRef: %s\n", upstream.PickerDataLayerKey(r), extractor)
		if precise != nil {
			b.WriteString(precise.source())
		}
	}
	var gates []string
	if dataLayer && !upstream.PickerDataLayer(r) {
		// Experimental there: off unless gated, and the configuration's
		// data layer is then refused ("disallowed Extractor").
		gates = append(gates, upstream.PickerDataLayerGate)
	}
	if ttlSeconds > 0 || ttlSeconds == flowControlWithoutTTL {
		gates = append(gates, upstream.PickerFlowControlGate)
	}
	if len(gates) > 0 {
		b.WriteString("featureGates:\n")
		for _, g := range gates {
			fmt.Fprintf(&b, "- %s\n", g)
		}
	}
	if ttlSeconds > 0 {
		// A pool with no endpoint is saturated: flow control queues
		// the request until a pod is ready and scraped, or the TTL.
		fmt.Fprintf(&b, "flowControl:\n  defaultRequestTTL: %ds\n", ttlSeconds)
	}
	return b.String()
}

// ConfigMap holds the picker's configuration.
func ConfigMap(p Pool) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: meta(p.Picker.Name, p.Namespace, p.Labels),
		Data:       map[string]string{ConfigKey: configOf(p.Picker)},
	}
}

// configOf is a picker's configuration: a disaggregated model's, or
// another's.
func configOf(pk Picker) string {
	ttl := pk.RequestTTLSeconds
	if pk.FlowControl && ttl == 0 {
		ttl = flowControlWithoutTTL
	}
	if pk.Disaggregated {
		return ConfigPD(pk.Release, pk.Weights, pk.KVCacheMetric, ttl)
	}
	if pk.Precise != nil {
		return ConfigPrecise(pk.Release, pk.Weights, pk.KVCacheMetric, ttl, *pk.Precise)
	}
	return Config(pk.Release, pk.Weights, pk.KVCacheMetric, ttl)
}

// flowControlWithoutTTL, as a configuration's TTL, turns flow control on
// with no flowControl section: a held request waits for its own context,
// the gateway's timeout (GAIE@v1.5.0 pkg/epp/flowcontrol/controller/
// config.go:37-40, "If zero, no TTL is applied by default"), and the
// picker's default saturation detector (utilization, added by
// pkg/epp/config/loader/defaults.go:263-275@v1.5.0) gates dispatch.
const flowControlWithoutTTL = -1

// AnnotationConfig, on the picker's pods, is a digest of its configuration
// (ConfigMap): the picker reads its configuration file once, at start
// (GAIE.md §j), so a new configuration (other scorer weights, a queue TTL,
// disaggregation turned on or off) rolls its pods, which then read it.
const AnnotationConfig = "serving.vllm.ai/picker-config"

// ConfigDigest is AnnotationConfig's value for a configuration: the first
// 16 hex digits of its SHA-256.
func ConfigDigest(config string) string {
	sum := sha256.Sum256([]byte(config))
	return hex.EncodeToString(sum[:8])
}

// podAnnotations are the picker pods' annotations: the caller's and the
// configuration's digest.
func podAnnotations(pk Picker) map[string]string {
	a := make(map[string]string, len(pk.PodAnnotations)+1)
	maps.Copy(a, pk.PodAnnotations)
	a[AnnotationConfig] = ConfigDigest(configOf(pk))
	return a
}
