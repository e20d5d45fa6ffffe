package inferencepool

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

func testPool(r upstream.PickerRelease, replicas int32) Pool {
	return Pool{
		Name: "s-m-pool", Namespace: "ns",
		Labels:     map[string]string{"app": "x"},
		Selector:   map[string]string{"app.kubernetes.io/name": "m"},
		TargetPort: 8000,
		Picker: Picker{Name: "s-m-epp", Image: "img", Release: r, Replicas: replicas,
			PodLabels: map[string]string{"app.kubernetes.io/name": "m-epp"}, Weights: DefaultWeights},
	}
}

var (
	llmd010 = upstream.PickerRelease{Kind: upstream.PickerLLMD, Version: upstream.V(0, 10, 0)}
	llmd07  = upstream.PickerRelease{Kind: upstream.PickerLLMD, Version: upstream.V(0, 7, 0)}
	gaie150 = upstream.PickerRelease{Kind: upstream.PickerGAIE, Version: upstream.V(1, 5, 0)}
	gaie140 = upstream.PickerRelease{Kind: upstream.PickerGAIE, Version: upstream.V(1, 4, 0)}
	gaie130 = upstream.PickerRelease{Kind: upstream.PickerGAIE, Version: upstream.V(1, 3, 0)}
)

// TestArgs: the pool, the configuration, the ports, no metrics
// authentication or tracing; leader election with replicas; the engines' KV
// metric only when set.
func TestArgs(t *testing.T) {
	base := []string{"--pool-name=s-m-pool", "--pool-namespace=ns", "--pool-group=inference.networking.k8s.io", "--config-file=/config/config.yaml",
		"--grpc-port=9002", "--grpc-health-port=9003", "--metrics-port=9090", "--metrics-endpoint-auth=false", "--tracing=false"}
	if diff := cmp.Diff(base, Args(testPool(llmd010, 1))); diff != "" {
		t.Errorf("one replica (-want +got):\n%s", diff)
	}
	p := testPool(gaie130, 2)
	p.Picker.KVCacheMetric = "vllm:gpu_cache_usage_perc"
	want := append(append([]string{}, base...), "--kv-cache-usage-percentage-metric=vllm:gpu_cache_usage_perc", "--ha-enable-leader-election=true")
	if diff := cmp.Diff(want, Args(p)); diff != "" {
		t.Errorf("two replicas, the old KV metric (-want +got):\n%s", diff)
	}
	// From the data layer on, the metric is the configuration's: llm-d
	// v0.9.0 on refuses the flag set explicitly.
	p = testPool(llmd010, 1)
	p.Picker.KVCacheMetric = "vllm:gpu_cache_usage_perc"
	if diff := cmp.Diff(base, Args(p)); diff != "" {
		t.Errorf("llm-d 0.10.0, the old KV metric (-want +got):\n%s", diff)
	}
	// GAIE v1.4.0 and llm-d v0.7.0 refuse the flag set at all, before their
	// data layer is on by default (epp-validation.tsv): never the flag.
	for _, r := range []upstream.PickerRelease{gaie140, llmd07} {
		p = testPool(r, 1)
		p.Picker.KVCacheMetric = "vllm:gpu_cache_usage_perc"
		if diff := cmp.Diff(base, Args(p)); diff != "" {
			t.Errorf("%v, the old KV metric (-want +got):\n%s", r, diff)
		}
	}
}

// TestConfig: each release's apiVersion, the data layer where the release's
// default configuration has it, a scorer of weight 0 left out.
func TestConfig(t *testing.T) {
	const scorers = `- type: queue-scorer
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
`
	const profile = `schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: kv-cache-utilization-scorer
    weight: 2
  - pluginRef: prefix-cache-scorer
    weight: 3
`
	const dataLayer = `dataLayer:
  sources:
  - pluginRef: metrics-data-source
    extractors:
    - pluginRef: core-metrics-extractor
`
	const dataPlugins = "- type: metrics-data-source\n- type: core-metrics-extractor\n"
	// The extractor's vllm engine config with vLLM's old KV-cache metric.
	const oldMetricParams = `  parameters:
    engineConfigs:
    - name: vllm
      queuedRequestsSpec: vllm:num_requests_waiting
      runningRequestsSpec: vllm:num_requests_running
      kvUsageSpec: vllm:gpu_cache_usage_perc
      loraSpec: vllm:lora_requests_info
      cacheInfoSpec: vllm:cache_config_info
`
	const oldDataLayer = "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n" + scorers + "- type: metrics-data-source\n- type: model-server-protocol-metrics\n" + oldMetricParams + profile + `data:
  sources:
  - pluginRef: metrics-data-source
    extractors:
    - pluginRef: model-server-protocol-metrics
featureGates:
- dataLayer
`
	for name, tc := range map[string]struct {
		r    upstream.PickerRelease
		w    Weights
		ttl  int64
		kv   string
		want string
	}{
		"LLMD010": {llmd010, DefaultWeights, 0, "", "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n" + scorers + dataPlugins + profile + dataLayer},
		"LLMD07":  {llmd07, DefaultWeights, 0, "", "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n" + scorers + profile},
		"GAIE150": {gaie150, DefaultWeights, 0, "", "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n" + scorers + dataPlugins + profile + dataLayer},
		// The flag carries the metric before the data layer.
		"OldMetricGAIE130": {gaie130, DefaultWeights, 0, "vllm:gpu_cache_usage_perc", "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n" + scorers + profile},
		"OldMetricLLMD010": {llmd010, DefaultWeights, 0, "vllm:gpu_cache_usage_perc", "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n" + scorers + dataPlugins + oldMetricParams + profile + dataLayer},
		// GAIE v1.4.0 and llm-d v0.7.0 refuse the flag: the data layer,
		// behind its gate, under its old names, carries the metric.
		"OldMetricGAIE140":            {gaie140, DefaultWeights, 0, "vllm:gpu_cache_usage_perc", oldDataLayer},
		"OldMetricLLMD07":             {llmd07, DefaultWeights, 0, "vllm:gpu_cache_usage_perc", oldDataLayer},
		"OldMetricFlowControlGAIE140": {gaie140, DefaultWeights, 60, "vllm:gpu_cache_usage_perc", strings.Replace(oldDataLayer, "- dataLayer\n", "- dataLayer\n- flowControl\nflowControl:\n  defaultRequestTTL: 60s\n", 1)},
		// Scale to zero: the flowControl gate and the request TTL
		// (GAIE.md §g), as e2e TestEndpointPicker runs them.
		"FlowControlGAIE150": {gaie150, DefaultWeights, 900, "", "apiVersion: inference.networking.x-k8s.io/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n" + scorers + dataPlugins + profile + dataLayer +
			"featureGates:\n- flowControl\nflowControl:\n  defaultRequestTTL: 900s\n"},
		"FlowControlLLMD010": {llmd010, DefaultWeights, 1200, "", "apiVersion: llm-d.ai/v1alpha1\nkind: EndpointPickerConfig\nplugins:\n" + scorers + dataPlugins + profile + dataLayer +
			"featureGates:\n- flowControl\nflowControl:\n  defaultRequestTTL: 1200s\n"},
		"NoQueue": {gaie130, Weights{KVCacheUtilization: 1, PrefixCache: 5}, 0, "", `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: kv-cache-utilization-scorer
    weight: 1
  - pluginRef: prefix-cache-scorer
    weight: 5
`},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Config(tc.r, tc.w, tc.kv, tc.ttl)); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRules: what each release reads, and leases only with leader
// election.
func TestRules(t *testing.T) {
	read := []string{"list", "watch"}
	base := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: read},
		{APIGroups: []string{"inference.networking.k8s.io"}, Resources: []string{"inferencepools"}, Verbs: read},
	}
	objectives := func(groups ...string) rbacv1.PolicyRule {
		return rbacv1.PolicyRule{APIGroups: groups, Resources: []string{"inferenceobjectives", "inferencemodelrewrites"}, Verbs: read}
	}
	if diff := cmp.Diff(append(append([]rbacv1.PolicyRule{}, base...), objectives("inference.networking.x-k8s.io", "llm-d.ai")), Rules(testPool(llmd010, 1))); diff != "" {
		t.Errorf("llm-d 0.10.0 (-want +got):\n%s", diff)
	}
	want := append(append([]rbacv1.PolicyRule{}, base...), objectives("inference.networking.x-k8s.io"),
		rbacv1.PolicyRule{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}})
	if diff := cmp.Diff(want, Rules(testPool(gaie150, 2))); diff != "" {
		t.Errorf("GAIE 1.5.0, two replicas (-want +got):\n%s", diff)
	}
}

// TestHTTPRoute: one rule per pool, the pool as backend, a prefix the
// gateway strips, the request timeout.
func TestHTTPRoute(t *testing.T) {
	r := HTTPRoute(Route{Name: "s-route", Namespace: "ns", Parents: []ParentRef{{Name: "gw", Namespace: "gws", SectionName: "https"}},
		Rules: []Rule{{Pool: "s-a-pool", PathPrefix: "/a"}, {Pool: "s-b-pool"}}, RequestTimeout: "10m"})
	want := map[string]any{
		"parentRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw", "namespace": "gws", "sectionName": "https"}},
		"rules": []any{
			map[string]any{
				"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/a"}}},
				"backendRefs": []any{map[string]any{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "s-a-pool"}},
				"filters": []any{map[string]any{"type": "URLRewrite", "urlRewrite": map[string]any{
					"path": map[string]any{"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}},
				"timeouts": map[string]any{"request": "10m"},
			},
			map[string]any{
				"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": "/"}}},
				"backendRefs": []any{map[string]any{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "s-b-pool"}},
				"timeouts":    map[string]any{"request": "10m"},
			},
		},
	}
	if diff := cmp.Diff(want, r.Object["spec"]); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
}

// TestInferenceObjective: the objective in the group its picker watches,
// its poolRef written out in full (the picker keeps only objectives whose
// poolRef group is its pool's; GAIE.md §h) and its priority.
func TestInferenceObjective(t *testing.T) {
	o := Objective{
		Name: "s-m-batch", Namespace: "ns", Labels: map[string]string{"app": "x"},
		APIVersion: upstream.PickerObjectiveOf(llmd010).APIVersion, Pool: "s-m-pool", Priority: -1,
	}
	want := map[string]any{
		"apiVersion": "llm-d.ai/v1alpha2",
		"kind":       "InferenceObjective",
		"metadata":   map[string]any{"name": "s-m-batch", "namespace": "ns", "labels": map[string]any{"app": "x"}},
		"spec": map[string]any{
			"poolRef":  map[string]any{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "s-m-pool"},
			"priority": int64(-1),
		},
	}
	if diff := cmp.Diff(want, InferenceObjective(o).Object); diff != "" {
		t.Errorf("llm-d 0.10.0 (-want +got):\n%s", diff)
	}
	o.APIVersion = upstream.PickerObjectiveOf(gaie150).APIVersion
	if got := InferenceObjective(o).GetAPIVersion(); got != "inference.networking.x-k8s.io/v1alpha2" {
		t.Errorf("GAIE 1.5.0: apiVersion %s, want inference.networking.x-k8s.io/v1alpha2", got)
	}
}

// TestPodAnnotations: the picker's pods carry the annotations given and
// the digest of the configuration, which changes with it (the picker reads
// it once, at start: a new one rolls the pods).
func TestPodAnnotations(t *testing.T) {
	p := testPool(gaie150, 1)
	digest := ConfigDigest(ConfigMap(p).Data[ConfigKey])
	if len(digest) != 16 {
		t.Errorf("digest %q, want 16 hex digits", digest)
	}
	if diff := cmp.Diff(map[string]string{AnnotationConfig: digest}, Deployment(p).Spec.Template.Annotations); diff != "" {
		t.Errorf("no annotations given (-want +got):\n%s", diff)
	}
	p.Picker.PodAnnotations = map[string]string{"k": "v"}
	if diff := cmp.Diff(map[string]string{"k": "v", AnnotationConfig: digest}, Deployment(p).Spec.Template.Annotations); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if p.Picker.PodAnnotations[AnnotationConfig] != "" {
		t.Error("Deployment wrote into the caller's annotations")
	}
	// Other weights, another configuration, another digest.
	p.Picker.Weights.Queue++
	if got := Deployment(p).Spec.Template.Annotations[AnnotationConfig]; got == digest {
		t.Errorf("the digest %s did not change with the configuration", got)
	}
}
