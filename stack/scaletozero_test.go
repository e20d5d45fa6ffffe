package stack

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const promAddr = "http://prometheus.monitoring:9090"

func zeroBlock(kv ...any) map[string]any {
	z := map[string]any{"maxReplicas": int64(3), "prometheusAddress": promAddr}
	for i := 0; i < len(kv); i += 2 {
		z[kv[i].(string)] = kv[i+1]
	}
	return z
}

// TestScaleToZeroInferenceExtension: the ScaledObject (minReplicaCount 0,
// a wake trigger on the picker's queue and the engines' running requests,
// scale-out on the engines' queue, a new model's first replica left up for
// the cold start and the idle time), the picker's flow control with the
// start-up budget as TTL, the route's timeout a minute above it, and no
// replicas on the engine Deployment.
func TestScaleToZeroInferenceExtension(t *testing.T) {
	// org/m announces no size: the start-up budget is the minimum, 600 s.
	rsp := mustRun(t, req(t, gieXR("scaleToZero", zeroBlock("idleSeconds", int64(300))), nil, nil))
	so := rsp.objects["engine-m-scaledobject"].(*unstructured.Unstructured)
	want := map[string]any{
		"scaleTargetRef":  map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "s-m-deployment-vllm"},
		"minReplicaCount": int64(0), "maxReplicaCount": int64(3), "pollingInterval": int64(15), "cooldownPeriod": int64(300),
		"initialCooldownPeriod": int64(600 + 300),
		"triggers": []any{
			map[string]any{"type": "prometheus", "name": "wake", "metadata": map[string]any{"serverAddress": promAddr, "threshold": "1",
				"query": `(sum(llm_d_epp_flow_control_queue_size{namespace="llm",inference_pool="s-m-pool"}) or vector(0)) + (sum(vllm:num_requests_running{model_name="org/m",namespace="llm"}) or vector(0)) > bool 0`}},
			map[string]any{"type": "prometheus", "name": "waiting", "metadata": map[string]any{"serverAddress": promAddr, "threshold": "5",
				"query": `sum(vllm:num_requests_waiting{model_name="org/m",namespace="llm"})`}},
		},
	}
	if diff := cmp.Diff(want, so.Object["spec"]); diff != "" {
		t.Errorf("ScaledObject spec (-want +got):\n%s", diff)
	}
	if d := desired(t, rsp, "engine-m", &appsv1.Deployment{}); d.Spec.Replicas != nil {
		t.Errorf("the engine Deployment sets replicas %d: KEDA owns them", *d.Spec.Replicas)
	}
	cfg := desired(t, rsp, "engine-m-epp-config", &corev1.ConfigMap{}).Data["config.yaml"]
	if !strings.HasSuffix(cfg, "featureGates:\n- flowControl\nflowControl:\n  defaultRequestTTL: 600s\n") {
		t.Errorf("the picker's configuration has no flow control with the start-up budget as TTL:\n%s", cfg)
	}
	route := rsp.objects["engine-m-httproute"].(*unstructured.Unstructured)
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	if got, _, _ := unstructured.NestedString(rules[0].(map[string]any), "timeouts", "request"); got != "11m" {
		t.Errorf("route timeout %s, want 11m: the 600 s cold start and a minute", got)
	}
}

// TestScaleToZeroBudgets: the cold-start time defaults to the start-up
// budget by the model's size, a longer one is kept, a shorter one refused;
// the GAIE picker's queue gauge is its own name.
func TestScaleToZeroBudgets(t *testing.T) {
	// 70B at 2 bytes: 300 + 10*140 = 1700 s.
	xr := gieXR("model.modelURL", "meta-llama/Llama-3.1-70B-Instruct", "scaleToZero", zeroBlock(),
		"inferenceExtension.picker", map[string]any{"image": "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0"})
	rsp := mustRun(t, req(t, xr, nil, nil))
	if cfg := desired(t, rsp, "engine-m-epp-config", &corev1.ConfigMap{}).Data["config.yaml"]; !strings.Contains(cfg, "defaultRequestTTL: 1700s\n") {
		t.Errorf("70B: want TTL 1700s:\n%s", cfg)
	}
	so := rsp.objects["engine-m-scaledobject"].(*unstructured.Unstructured)
	if q := so.Object["spec"].(map[string]any)["triggers"].([]any)[0].(map[string]any)["metadata"].(map[string]any)["query"].(string); !strings.Contains(q, "inference_extension_flow_control_queue_size{") {
		t.Errorf("GAIE v1.5.0's queue gauge: %s", q)
	}
	route := rsp.objects["engine-m-httproute"].(*unstructured.Unstructured)
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	if got, _, _ := unstructured.NestedString(rules[0].(map[string]any), "timeouts", "request"); got != "30m" {
		t.Errorf("route timeout %s, want 30m (1700 s + 60 s, whole minutes)", got)
	}
	longer := gieXR("scaleToZero", zeroBlock("coldStartSeconds", int64(900)))
	if cfg := desired(t, mustRun(t, req(t, longer, nil, nil)), "engine-m-epp-config", &corev1.ConfigMap{}).Data["config.yaml"]; !strings.Contains(cfg, "defaultRequestTTL: 900s\n") {
		t.Errorf("coldStartSeconds 900: want TTL 900s:\n%s", cfg)
	}
}

// TestScaleToZeroRouter: the router cannot hold requests: a wake trigger on
// its incoming requests and a warning that says so.
func TestScaleToZeroRouter(t *testing.T) {
	rsp := mustRun(t, req(t, with("scaleToZero", zeroBlock()), nil, nil))
	so := rsp.objects["engine-m-scaledobject"].(*unstructured.Unstructured)
	wake := so.Object["spec"].(map[string]any)["triggers"].([]any)[0].(map[string]any)["metadata"].(map[string]any)["query"]
	if want := `sum(rate(vllm:num_incoming_requests_total{model="org/m",namespace="llm"}[2m])) > bool 0`; wake != want {
		t.Errorf("wake query %v, want %s", wake, want)
	}
	if len(rsp.warnings) != 1 || !strings.Contains(rsp.warnings[0], "get 503") || !strings.Contains(rsp.warnings[0], "inferenceExtension") {
		t.Errorf("warnings %q: want one saying the first requests get 503 and the inference extension holds them", rsp.warnings)
	}
}

// TestScaleToZeroRefusals: each refusal names the field and the reason.
func TestScaleToZeroRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"short cold start":   {gieXR("scaleToZero", zeroBlock("coldStartSeconds", int64(300))), "spec.scaleToZero.coldStartSeconds 300 is shorter than the model's start-up budget of 600 seconds"},
		"no maxReplicas":     {gieXR("scaleToZero", map[string]any{"prometheusAddress": promAddr}), "spec.scaleToZero.maxReplicas is required"},
		"no prometheus":      {gieXR("scaleToZero", map[string]any{"maxReplicas": int64(2)}), "spec.scaleToZero.prometheusAddress is required"},
		"with autoscaling":   {gieXR("scaleToZero", zeroBlock(), "autoscaling", map[string]any{"maxReplicas": int64(2), "prometheusAddress": promAddr}), "both scale the model"},
		"route timeout":      {gieXR("scaleToZero", zeroBlock(), "inferenceExtension.requestTimeout", "5m"), "spec.inferenceExtension.requestTimeout 5m is shorter than spec.scaleToZero's cold-start time of 600 seconds"},
		"old picker":         {gieXR("scaleToZero", zeroBlock(), "inferenceExtension.picker", map[string]any{"image": "registry.k8s.io/gateway-api-inference-extension/epp:v1.3.0"}), "sets no request TTL"},
		"old router":         {with("scaleToZero", zeroBlock(), "routerConfig.image", "lmcache/lmstack-router:0.1.7"), "needs router 0.1.8 or later"},
		"quantity threshold": {gieXR("scaleToZero", zeroBlock("threshold", "5Gi")), `spec.scaleToZero.threshold "5Gi" is invalid: KEDA reads it as a plain number, not a Kubernetes quantity; use a positive number such as "5" or "2.5"`},
		"prometheus host":    {gieXR("scaleToZero", zeroBlock("prometheusAddress", "prometheus:9090")), `spec.scaleToZero.prometheusAddress "prometheus:9090" is not a Prometheus URL: KEDA appends /api/v1/query to it; use an http or https URL with a host and no query, such as http://prometheus-operated.monitoring:9090`},
		"multi-node":         {with("scaleToZero", zeroBlock(), "multiNode", map[string]any{"podsPerReplica": int64(2)}), "spec.scaleToZero: a multi-node model is a LeaderWorkerSet"},
	} {
		t.Run(name, func(t *testing.T) {
			rsp := run(t, req(t, tc.xr, nil, nil))
			if !strings.Contains(rsp.refusal, tc.want) {
				t.Errorf("refusal %q, want it to say %q", rsp.refusal, tc.want)
			}
		})
	}
}

// TestScaleToZeroInitialCooldownCapped: initialCooldownPeriod, the cold
// start plus the idle time, is an int32 in KEDA's CRD: a sum past it is
// capped, not refused by the API server (tools/kubediff found it).
func TestScaleToZeroInitialCooldownCapped(t *testing.T) {
	rsp := mustRun(t, req(t, gieXR("scaleToZero", zeroBlock("idleSeconds", int64(math.MaxInt32))), nil, nil))
	so := rsp.objects["engine-m-scaledobject"].(*unstructured.Unstructured)
	if got, _, _ := unstructured.NestedInt64(so.Object, "spec", "initialCooldownPeriod"); got != math.MaxInt32 {
		t.Errorf("initialCooldownPeriod %d, want %d", got, math.MaxInt32)
	}
}
