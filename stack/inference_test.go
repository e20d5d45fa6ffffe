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
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
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
		"engine-m-httproute"}
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
	// The model's own path, and the gateway's root: the first model holds
	// it.
	if diff := cmp.Diff([]string{"/m s-m-pool 10m", "/ s-m-pool 10m"}, routeRules(t, rsp, "engine-m-httproute")); diff != "" {
		t.Errorf("one model: route rules (-want +got):\n%s", diff)
	}
}

// routeRules are the rules of the HTTPRoute at key, each as "prefix pool
// timeout"; a rule whose prefix is not / strips it (ReplacePrefixMatch /).
func routeRules(t *testing.T, rsp response, key string) []string {
	t.Helper()
	route, ok := rsp.objects[key].(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("no HTTPRoute %s", key)
	}
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	var got []string
	for _, r := range rules {
		m := r.(map[string]any)
		prefix, _, _ := unstructured.NestedString(m["matches"].([]any)[0].(map[string]any), "path", "value")
		pool, _, _ := unstructured.NestedString(m["backendRefs"].([]any)[0].(map[string]any), "name")
		timeout, _, _ := unstructured.NestedString(m, "timeouts", "request")
		filters, _, _ := unstructured.NestedSlice(m, "filters")
		if (prefix != "/") != (len(filters) == 1) {
			t.Errorf("%s: the rule for %s has filters %v: want the prefix stripped exactly when it is not /", key, prefix, filters)
		}
		got = append(got, prefix+" "+pool+" "+timeout)
	}
	return got
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
	got := append(routeRules(t, rsp, "engine-a-httproute"), routeRules(t, rsp, "engine-b-httproute")...)
	if diff := cmp.Diff([]string{"/a s-a-pool 29m", "/ s-a-pool 29m", "/b s-b-pool 29m"}, got); diff != "" {
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
		"NoParent": {gieXR("inferenceExtension.parentRefs", []any{}),
			"spec.inferenceExtension.parentRefs is required: name the Gateway the route attaches to"},
		// Its path would take the requests of the gateway's root.
		"ModelNamedV1": {gieXR("model.name", "v1"),
			`spec.model.name "v1": behind the inference extension a model is served at /<model>/v1, and /v1 is where the gateway's root serves the OpenAI API: the route of this model would take every /v1/... request; rename the model`},
	} {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, tc.xr); !strings.Contains(got, tc.want) {
				t.Errorf("refusal:\n got: %s\nwant: …%s…", got, prefix+tc.want)
			}
		})
	}
}

// TestInferenceObjectives: each of a model's inferenceObjectives is an
// InferenceObjective of the model's pool, named <stack>-<model>-<name>, in
// the group the picker's release watches; the picker's pods are annotated
// with that group's apiVersion, so the first objective restarts a picker
// that started without their CRD; a model without objectives has neither.
func TestInferenceObjectives(t *testing.T) {
	objs := []any{map[string]any{"name": "interactive", "priority": 10}, map[string]any{"name": "batch", "priority": -1}}
	for image, apiVersion := range map[string]string{
		"": "llm-d.ai/v1alpha2",
		"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.8.0":          "inference.networking.x-k8s.io/v1alpha2",
		"registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0": "inference.networking.x-k8s.io/v1alpha2",
	} {
		xr := gieXR("model.inferenceObjectives", objs)
		if image != "" {
			stacktest.SetPath(xr, "spec.inferenceExtension.picker.image", image)
		}
		rsp := reconciled(t, xr, nil)
		if rsp.refusal != "" {
			t.Fatalf("%s: %s", image, rsp.refusal)
		}
		ks := keys(rsp)
		group, _, _ := strings.Cut(apiVersion, "/")
		for _, k := range []string{"engine-m-objective-interactive." + group, "engine-m-objective-batch." + group} {
			if !slices.Contains(ks, k) {
				t.Errorf("%s: no %s among %v", image, k, ks)
			}
		}
		got := rsp.objects["engine-m-objective-batch."+group].(*unstructured.Unstructured)
		want := map[string]any{
			"apiVersion": apiVersion,
			"kind":       "InferenceObjective",
			"metadata": map[string]any{"name": "s-m-batch", "namespace": "llm", "labels": map[string]any{
				"app.kubernetes.io/component": "endpoint-picker", "app.kubernetes.io/instance": "s", "app.kubernetes.io/managed-by": "crossplane",
				"app.kubernetes.io/name": "m", "app.kubernetes.io/part-of": "vllm-stack", "model": "m",
			}},
			"spec": map[string]any{
				"poolRef":  map[string]any{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": "s-m-pool"},
				"priority": int64(-1),
			},
		}
		if diff := cmp.Diff(want, got.Object); diff != "" {
			t.Errorf("%s: InferenceObjective batch (-want +got):\n%s", image, diff)
		}
		picker := desired(t, rsp, "engine-m-epp", &appsv1.Deployment{})
		delete(picker.Spec.Template.Annotations, inferencepool.AnnotationConfig) // TestPodAnnotations'
		if diff := cmp.Diff(map[string]string{"serving.vllm.ai/inference-objectives": apiVersion}, picker.Spec.Template.Annotations); diff != "" {
			t.Errorf("%s: the picker's pod annotations (-want +got):\n%s", image, diff)
		}
	}
	rsp := reconciled(t, gieXR(), nil)
	if picker := desired(t, rsp, "engine-m-epp", &appsv1.Deployment{}); picker.Spec.Template.Annotations[build.AnnotationObjectives] != "" {
		t.Errorf("no objectives: the picker's pods are annotated %v", picker.Spec.Template.Annotations)
	}
	for _, k := range keys(rsp) {
		if strings.Contains(k, "objective") {
			t.Errorf("no objectives: composed %s", k)
		}
	}
}

// TestInferenceObjectiveRefusals: objectives only with the inference
// extension; names that are DNS labels, unique per model, whose objects'
// names fit; priorities of an int32. Each message names the field and the
// fix.
func TestInferenceObjectiveRefusals(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	long := strings.Repeat("a", 250)
	for name, tc := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"NoExtension": {with("model.inferenceObjectives", []any{map[string]any{"name": "batch", "priority": -1}}),
			"spec.model.inferenceObjectives: an objective is a priority the inference extension's endpoint picker gives the requests that name it, and the stack routes through the production-stack router, which has none: set spec.inferenceExtension, or remove spec.model.inferenceObjectives"},
		"ExtensionOff": {gieXR("inferenceExtension.enabled", false, "model.inferenceObjectives", []any{map[string]any{"name": "batch", "priority": -1}}),
			"spec.model.inferenceObjectives: an objective is a priority the inference extension's endpoint picker gives the requests that name it, and the stack routes through the production-stack router, which has none: set spec.inferenceExtension, or remove spec.model.inferenceObjectives"},
		"NotALabel": {gieXR("model.inferenceObjectives", []any{map[string]any{"name": "Batch_Jobs", "priority": -1}}),
			`spec.model.inferenceObjectives[0].name "Batch_Jobs" is not a DNS label: use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit, such as batch`},
		"Twice": {with("inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}}, "model", nil,
			"models", []any{map[string]any{"name": "a", "modelURL": "org/a", "inferenceObjectives": []any{map[string]any{"name": "batch", "priority": -1}, map[string]any{"name": "batch", "priority": 1}}}}),
			`spec.models[0].inferenceObjectives[1].name "batch" is the name of an earlier objective of the model: give each objective its own name`},
		"TooLong": {gieXR("model.name", long, "model.inferenceObjectives", []any{map[string]any{"name": "interactive", "priority": 1}}),
			`spec.model.inferenceObjectives[0].name "interactive" names the InferenceObjective s-` + long + `-interactive, 264 characters, and an object name has at most 253`},
		"PriorityTooHigh": {gieXR("model.inferenceObjectives", []any{map[string]any{"name": "batch", "priority": int64(1) << 31}}),
			"spec.model.inferenceObjectives[0].priority 2147483648 is invalid: must be at most 2147483647"},
		"NoPriority": {gieXR("model.inferenceObjectives", []any{map[string]any{"name": "batch"}}),
			"spec.model.inferenceObjectives[0].priority is required"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, tc.xr); !strings.Contains(got, tc.want) {
				t.Errorf("refusal:\n got: %s\nwant: …%s…", got, prefix+tc.want)
			}
		})
	}
}

// TestExtensionIgnoresRouterConfig: with the inference extension the stack
// runs no router, so every routerConfig field that only the router's objects
// read is named in one warning (issue 38 §4); apiKeySecret, which the
// engines read, is not; and a stack without them has no such warning.
func TestExtensionIgnoresRouterConfig(t *testing.T) {
	const want = "spec.inferenceExtension: routerConfig.image, routerConfig.scheduling, routerConfig.extraVolumes, routerConfig.replicas, routerConfig.k8sServiceDiscoveryType, routerConfig.extraArgs, routerConfig.podDisruptionBudget, routerConfig.autoscaling configure the production-stack router, which a stack on the inference extension does not run: they have no effect; remove them (inferenceExtension.picker configures the endpoint pickers)"
	rsp := mustRun(t, req(t, gieXR(
		"routerConfig.replicas", 3,
		"routerConfig.podDisruptionBudget", map[string]any{"minAvailable": 1},
		"routerConfig.autoscaling", map[string]any{"maxReplicas": 4},
		"routerConfig.extraArgs", []any{"--log-level", "debug"},
		"routerConfig.k8sServiceDiscoveryType", "service-name",
		"routerConfig.image", "lmcache/lmstack-router:v0.1.12",
		"routerConfig.scheduling", map[string]any{"nodeSelector": map[string]any{"pool": "cpu"}},
		"routerConfig.extraVolumes", []any{map[string]any{"name": "x", "emptyDir": map[string]any{}}},
		"routerConfig.apiKeySecret", map[string]any{"name": "api-key", "key": "key"},
	), nil, nil))
	if !slices.Contains(rsp.warnings, want) {
		t.Errorf("warnings %q\nwant one: %s", rsp.warnings, want)
	}
	for _, w := range mustRun(t, req(t, gieXR("routerConfig.apiKeySecret", map[string]any{"name": "api-key", "key": "key"}), nil, nil)).warnings {
		if strings.Contains(w, "configure the production-stack router") {
			t.Errorf("apiKeySecret, which the engines read, is warned about: %s", w)
		}
	}
}
