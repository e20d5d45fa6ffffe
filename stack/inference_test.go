package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// gieXR is minimalXR on the inference extension, attached to one Gateway.
func gieXR(kv ...any) map[string]any {
	return with(append([]any{"inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw", "namespace": "gws"}}}}, kv...)...)
}

// TestInferenceExtensionObjects: per model a pool over exactly its serving
// pods and a picker; one route; no router.
func TestInferenceExtensionObjects(t *testing.T) {
	rsp := reconciled(t, gieXR(), nil)
	if rsp.refusal != "" {
		t.Fatal(rsp.refusal)
	}
	want := []string{"engine-m", "engine-m-service", "engine-m-storage",
		"engine-m-inferencepool", "engine-m-epp", "engine-m-epp-service", "engine-m-epp-serviceaccount", "engine-m-epp-config", "engine-m-epp-role", "engine-m-epp-rolebinding",
		"inference-httproute"}
	if diff := cmp.Diff(want, keys(rsp)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	pool := rsp.objects["engine-m-inferencepool"].(*unstructured.Unstructured)
	sel, _, _ := unstructured.NestedStringMap(pool.Object, "spec", "selector", "matchLabels")
	engine := desired(t, rsp, "engine-m", &appsv1.Deployment{})
	if diff := cmp.Diff(engine.Spec.Selector.MatchLabels, sel); diff != "" {
		t.Errorf("the pool selects other pods than the engine Deployment's (-engine +pool):\n%s", diff)
	}
	if ref, _, _ := unstructured.NestedMap(pool.Object, "spec", "endpointPickerRef"); !cmp.Equal(ref, map[string]any{"name": "s-m-epp", "port": map[string]any{"number": int64(9002)}}) {
		t.Errorf("endpointPickerRef %v: want the picker's Service on 9002", ref)
	}
	svc := desired(t, rsp, "engine-m-epp-service", &corev1.Service{})
	picker := desired(t, rsp, "engine-m-epp", &appsv1.Deployment{})
	if !cmp.Equal(svc.Spec.Selector, picker.Spec.Template.Labels) {
		t.Errorf("the picker's Service selects %v, its pods are %v", svc.Spec.Selector, picker.Spec.Template.Labels)
	}
	route := rsp.objects["inference-httproute"].(*unstructured.Unstructured)
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	if len(rules) != 1 {
		t.Fatalf("one model: want one rule, got %v", rules)
	}
	if prefix, _, _ := unstructured.NestedString(rules[0].(map[string]any)["matches"].([]any)[0].(map[string]any), "path", "value"); prefix != "/" {
		t.Errorf("one model: the rule matches %q, want every path", prefix)
	}
}

// TestInferenceExtensionMetric: the picker reads the KV-cache metric the
// engines' vLLM exports, the old name before 0.9.2: in the configuration of
// a picker with the data layer (llm-d's v0.10.0 refuses the flag), as the
// flag before.
func TestInferenceExtensionMetric(t *testing.T) {
	const old = "vllm:gpu_cache_usage_perc"
	for name, tc := range map[string]struct {
		picker, vllm string
		flag, config bool
	}{
		"LLMD010OldVLLM": {"", "v0.8.5", false, true},
		"LLMD010":        {"", "v0.9.2", false, false},
		"GAIE130OldVLLM": {"registry.k8s.io/gateway-api-inference-extension/epp:v1.3.0", "v0.8.5", true, false},
		"GAIE130":        {"registry.k8s.io/gateway-api-inference-extension/epp:v1.3.0", "v0.12.0", false, false},
	} {
		t.Run(name, func(t *testing.T) {
			xr := gieXR("vllmConfig.image", "vllm/vllm-openai:"+tc.vllm)
			if tc.picker != "" {
				stacktest.SetPath(xr, "spec.inferenceExtension.picker.image", tc.picker)
			}
			rsp := mustRun(t, req(t, xr, nil, nil))
			args := desired(t, rsp, "engine-m-epp", &appsv1.Deployment{}).Spec.Template.Spec.Containers[0].Args
			if got := slices.Contains(args, "--kv-cache-usage-percentage-metric="+old); got != tc.flag {
				t.Errorf("flag --kv-cache-usage-percentage-metric=%s: %v, want %v (args %q)", old, got, tc.flag, args)
			}
			cfg := desired(t, rsp, "engine-m-epp-config", &corev1.ConfigMap{}).Data["config.yaml"]
			if got := strings.Contains(cfg, "kvUsageSpec: "+old); got != tc.config {
				t.Errorf("kvUsageSpec %s in the configuration: %v, want %v:\n%s", old, got, tc.config, cfg)
			}
		})
	}
}

// TestInferenceExtensionRoutes: several models, each under its own path
// prefix, which the gateway strips; the default timeout covers the longest
// start-up.
func TestInferenceExtensionRoutes(t *testing.T) {
	xr := gieXR()
	stacktest.SetPath(xr, "spec.model", nil)
	xr["spec"].(map[string]any)["models"] = []any{
		map[string]any{"name": "a", "modelURL": "org/a"},
		map[string]any{"name": "b", "modelURL": "meta-llama/Llama-3.1-70B-Instruct"},
	}
	rsp := mustRun(t, req(t, xr, nil, nil))
	route := rsp.objects["inference-httproute"].(*unstructured.Unstructured)
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	var got []string
	for _, r := range rules {
		m := r.(map[string]any)
		prefix, _, _ := unstructured.NestedString(m["matches"].([]any)[0].(map[string]any), "path", "value")
		pool, _, _ := unstructured.NestedString(m["backendRefs"].([]any)[0].(map[string]any), "name")
		timeout, _, _ := unstructured.NestedString(m, "timeouts", "request")
		got = append(got, prefix+" "+pool+" "+timeout)
	}
	if diff := cmp.Diff([]string{"/a s-a-pool 29m", "/b s-b-pool 29m"}, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
}

// TestInferenceExtensionRefusals: what the layer cannot do yet, and bad
// values, each naming the field.
func TestInferenceExtensionRefusals(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	for name, tc := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"UnknownImage": {gieXR("inferenceExtension.picker.image", "example.com/picker:v1.0.0"),
			"spec.inferenceExtension.picker.image example.com/picker:v1.0.0 is neither llm-d's endpoint picker (ghcr.io/llm-d/llm-d-router-endpoint-picker) nor the inference extension's (registry.k8s.io/gateway-api-inference-extension/epp): the function spells the picker's flags and configuration by release, so it must know which program runs; use one of the two, or your mirror of one under the same repository name"},
		"OldGAIE": {gieXR("inferenceExtension.picker.image", "registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0"),
			"spec.inferenceExtension.picker.image registry.k8s.io/gateway-api-inference-extension/epp:v1.2.0 runs gaie 1.2.0, older than gaie 1.3.0, the first that starts without the InferenceObjective CRD (earlier releases watch InferenceObjectives whether or not their CRD is served, and the stack installs no CRD): use gaie 1.3.0 or later"},
		"NoRelease": {gieXR("inferenceExtension.picker.image", "ghcr.io/llm-d/llm-d-router-endpoint-picker:latest"),
			`spec.inferenceExtension.picker.image ghcr.io/llm-d/llm-d-router-endpoint-picker:latest names no release (tag "latest"): set picker.version to the release it runs, such as 0.10.0`},
		"NoScorer": {gieXR("inferenceExtension.picker.scorers", map[string]any{"queue": 0, "kvCacheUtilization": 0, "prefixCache": 0}),
			"spec.inferenceExtension.picker.scorers: every weight is 0, and the picker needs a scorer to choose an endpoint: give at least one a weight above 0"},
		"RouterType": {gieXR("routerConfig.routerType", "session"),
			"spec.inferenceExtension: routerConfig.routerType session is the production-stack router's, and the endpoint picker routes the stack's requests: remove routerType, and weigh the picker's scorers (picker.scorers) instead"},
		"NetworkPolicy": {gieXR("networkPolicy", map[string]any{}),
			"spec.inferenceExtension: networkPolicy lets only the router reach the engines, and with the inference extension the Gateway's proxies send the requests and the pickers scrape the engines: remove networkPolicy, or route through the router"},
		"Disaggregated": {gieXR("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12", "disaggregation", map[string]any{}),
			"spec.inferenceExtension: spec.disaggregation needs the picker to schedule prefill and decode itself (llm-d's profile handler, prefill and decode filters, and a routing sidecar on the decode pods), which the stack does not render yet: route a disaggregated model through the production-stack router (remove inferenceExtension)"},
		"NoParent": {gieXR("inferenceExtension.parentRefs", []any{}),
			"spec.inferenceExtension.parentRefs is required: name the Gateway the route attaches to"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, tc.xr); !strings.Contains(got, tc.want) {
				t.Errorf("refusal:\n got: %s\nwant: …%s…", got, prefix+tc.want)
			}
		})
	}
}
