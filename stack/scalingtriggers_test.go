package stack

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// triggersOf are the triggers of the model's ScaledObject, as rendered.
func triggersOf(t *testing.T, rsp response, key string) []any {
	t.Helper()
	so, ok := rsp.objects[key].(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("no ScaledObject %s; objects %v", key, keys(rsp))
	}
	tr, _, _ := unstructured.NestedSlice(so.Object, "spec", "triggers")
	return tr
}

func pickerConfig(t *testing.T, rsp response) string {
	t.Helper()
	return desired(t, rsp, "engine-m-epp-config", &corev1.ConfigMap{}).Data["config.yaml"]
}

// TestPoolSaturationSignal: autoscaling.signal poolSaturation scales on
// the highest saturation the model's picker replicas record for its pool,
// under the name each release exports (metrics.tsv), as KEDA's Value
// metric at 0.7 unless threshold says otherwise, and turns the picker's
// flow control on (no TTL), which alone records the gauge (GAIE.md (k)).
func TestPoolSaturationSignal(t *testing.T) {
	for image, want := range map[string]string{
		"registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0": "inference_extension_flow_control_pool_saturation",
		"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.8.0":          "inference_extension_flow_control_pool_saturation",
		"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0":          "llm_d_epp_flow_control_pool_saturation",
		"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0":         "llm_d_epp_flow_control_pool_saturation",
	} {
		rsp := mustRun(t, req(t, gieXR("autoscaling", signalBlock("poolSaturation"), "monitoring", scraped, "inferenceExtension.picker.image", image), nil, nil))
		wantTriggers := []any{map[string]any{"type": "prometheus", "metricType": "Value", "metadata": map[string]any{
			"serverAddress": promAddr, "query": `max(` + want + `{namespace="llm",inference_pool="s-m-pool"})`, "threshold": "0.7"}}}
		if diff := cmp.Diff(wantTriggers, triggersOf(t, rsp, "engine-m-scaledobject")); diff != "" {
			t.Errorf("%s: triggers (-want +got):\n%s", image, diff)
		}
		cfg := pickerConfig(t, rsp)
		if !strings.Contains(cfg, "featureGates:\n") || !strings.Contains(cfg, "- flowControl\n") || strings.Contains(cfg, "defaultRequestTTL") {
			t.Errorf("%s: picker configuration without flow control, or with a TTL:\n%s", image, cfg)
		}
	}
	// Without poolSaturation, flow control stays off.
	if cfg := pickerConfig(t, mustRun(t, req(t, gieXR("autoscaling", signalBlock("pickerRunning"), "monitoring", scraped), nil, nil))); strings.Contains(cfg, "flowControl") {
		t.Errorf("flow control on for pickerRunning:\n%s", cfg)
	}
	rsp := mustRun(t, req(t, gieXR("autoscaling", signalBlock("poolSaturation", "threshold", "0.9"), "monitoring", scraped), nil, nil))
	if md := triggersOf(t, rsp, "engine-m-scaledobject")[0].(map[string]any)["metadata"].(map[string]any); md["threshold"] != "0.9" {
		t.Errorf("threshold %v, want 0.9", md["threshold"])
	}
}

// TestSeveralTriggers: autoscaling.triggers renders one named trigger per
// element, each on its signal or query with its own threshold (the
// signal's default when unset), poolSaturation as a Value; fallback with
// its behavior.
func TestSeveralTriggers(t *testing.T) {
	block := signalBlock("",
		"triggers", []any{
			map[string]any{"name": "waiting", "signal": "engineWaiting", "threshold": "3"},
			map[string]any{"name": "running", "signal": "pickerRunning"},
			map[string]any{"name": "saturation", "signal": "poolSaturation"},
			map[string]any{"name": "kv", "query": "max(vllm:kv_cache_usage_perc)", "threshold": "0.8"},
		},
		"fallback", map[string]any{"failureThreshold": int64(3), "replicas": int64(2), "behavior": "currentReplicasIfHigher"})
	rsp := mustRun(t, req(t, gieXR("autoscaling", block, "monitoring", scraped), nil, nil))
	trig := func(name, query, threshold string) map[string]any {
		return map[string]any{"type": "prometheus", "name": name, "metadata": map[string]any{"serverAddress": promAddr, "query": query, "threshold": threshold}}
	}
	sat := trig("saturation", `max(llm_d_epp_flow_control_pool_saturation{namespace="llm",inference_pool="s-m-pool"})`, "0.7")
	sat["metricType"] = "Value"
	want := []any{
		trig("waiting", `sum(vllm:num_requests_waiting{model_name="org/m",namespace="llm"})`, "3"),
		trig("running", `sum(llm_d_epp_request_running{namespace="llm",service="s-m-epp"})`, "16"),
		sat,
		trig("kv", "max(vllm:kv_cache_usage_perc)", "0.8"),
	}
	if diff := cmp.Diff(want, triggersOf(t, rsp, "engine-m-scaledobject")); diff != "" {
		t.Errorf("triggers (-want +got):\n%s", diff)
	}
	so := rsp.objects["engine-m-scaledobject"].(*unstructured.Unstructured)
	fb, _, _ := unstructured.NestedMap(so.Object, "spec", "fallback")
	if diff := cmp.Diff(map[string]any{"failureThreshold": int64(3), "replicas": int64(2), "behavior": "currentReplicasIfHigher"}, fb); diff != "" {
		t.Errorf("fallback (-want +got):\n%s", diff)
	}
	if cfg := pickerConfig(t, rsp); !strings.Contains(cfg, "- flowControl\n") {
		t.Errorf("a poolSaturation trigger without flow control:\n%s", cfg)
	}
	// A fallback without behavior leaves KEDA's default (static).
	rsp = mustRun(t, req(t, with("autoscaling", signalBlock("", "fallback", map[string]any{"failureThreshold": int64(3), "replicas": int64(2)})), nil, nil))
	so = rsp.objects["engine-m-scaledobject"].(*unstructured.Unstructured)
	if _, ok, _ := unstructured.NestedString(so.Object, "spec", "fallback", "behavior"); ok {
		t.Error("fallback.behavior rendered, not set")
	}
}

// TestScalingTriggersRefused: what KEDA or the facts cannot do with
// triggers, poolSaturation and fallback is refused, naming the field and
// the fix.
func TestScalingTriggersRefused(t *testing.T) {
	tr := func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	for name, c := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"poolSaturation behind the router": {with("autoscaling", signalBlock("poolSaturation"), "monitoring", scraped),
			"spec.autoscaling.signal poolSaturation reads the saturation of the model's pool, as its endpoint picker's flow control computes it, and the stack routes with the production-stack router (no inferenceExtension): use engineWaiting, or turn inferenceExtension on"},
		"poolSaturation unscraped": {gieXR("autoscaling", signalBlock("poolSaturation")),
			"spec.autoscaling.signal poolSaturation needs spec.monitoring.serviceMonitor: its query selects the picker's series by the namespace and service labels the picker's ServiceMonitor gives them; set serviceMonitor: {}"},
		"poolSaturation on GAIE v1.4.0": {gieXR("autoscaling", signalBlock("poolSaturation"), "monitoring", scraped, "inferenceExtension.picker.image", "registry.k8s.io/gateway-api-inference-extension/epp:v1.4.0"),
			"spec.autoscaling.signal poolSaturation: the endpoint picker gaie 1.4.0 exports no pool saturation gauge (flow control's, from GAIE v1.5.0 and llm-d v0.8.0): use a newer picker image, or pickerRunning"},
		"poolSaturation trigger on llm-d v0.7.0": {gieXR("autoscaling", signalBlock("", "triggers", []any{tr("name", "s", "signal", "poolSaturation")}), "monitoring", scraped, "inferenceExtension.picker.image", "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.7.0"),
			"spec.autoscaling.triggers[0].signal poolSaturation: the endpoint picker llm-d 0.7.0 exports no pool saturation gauge"},
		"pickerRunning trigger behind the router": {with("autoscaling", signalBlock("", "triggers", []any{tr("name", "r", "signal", "pickerRunning")}), "monitoring", scraped),
			"spec.autoscaling.triggers[0].signal pickerRunning reads the requests the model's endpoint picker has in flight, and the stack routes with the production-stack router"},
		"triggers with signal": {gieXR("autoscaling", signalBlock("engineWaiting", "triggers", []any{tr("name", "w", "signal", "engineWaiting")}), "monitoring", scraped),
			"spec.autoscaling.triggers and spec.autoscaling.signal, query or threshold both say what the model scales on: move them into a trigger of triggers"},
		"triggers with hpa": {with("autoscaling", map[string]any{"type": "hpa", "maxReplicas": int64(2), "triggers": []any{tr("name", "w", "signal", "engineWaiting")}}),
			"spec.autoscaling.triggers are KEDA triggers, and autoscaling.type hpa scales on CPU: use type keda, or remove triggers"},
		"a trigger with neither": {with("autoscaling", signalBlock("", "triggers", []any{tr("name", "w")})),
			"spec.autoscaling.triggers[0] needs a signal or a query: set signal (engineWaiting, pickerRunning or poolSaturation) or query"},
		"a trigger with both": {with("autoscaling", signalBlock("", "triggers", []any{tr("name", "w", "signal", "engineWaiting", "query", "sum(x)", "threshold", "1")})),
			"spec.autoscaling.triggers[0].signal and spec.autoscaling.triggers[0].query both say what the trigger scales on: remove one"},
		"a query without threshold": {with("autoscaling", signalBlock("", "triggers", []any{tr("name", "q", "query", "sum(x)")})),
			"spec.autoscaling.triggers[0].threshold is required with query: the query's value per replica at which KEDA scales out"},
		"a quantity threshold": {with("autoscaling", signalBlock("", "triggers", []any{tr("name", "q", "query", "sum(x)", "threshold", "5Gi")})),
			`spec.autoscaling.triggers[0].threshold "5Gi" is invalid`},
		"fallback with hpa": {with("autoscaling", map[string]any{"type": "hpa", "maxReplicas": int64(2), "fallback": map[string]any{"failureThreshold": int64(3), "replicas": int64(1)}}),
			"spec.autoscaling.fallback is what KEDA does when it cannot read its metric, and autoscaling.type hpa scales on CPU: use type keda, or remove fallback"},
		"fallback above maxReplicas": {with("autoscaling", signalBlock("", "fallback", map[string]any{"failureThreshold": int64(3), "replicas": int64(6)})),
			"spec.autoscaling.fallback.replicas 6 exceeds maxReplicas 4: the HorizontalPodAutoscaler KEDA makes keeps replicas within its bounds, so the fallback would run 4; lower fallback.replicas or raise maxReplicas"},
		"poolSaturation idle at 0": {gieXR("autoscaling", signalBlock("poolSaturation", "idleReplicas", int64(0)), "monitoring", scraped),
			"spec.autoscaling.idleReplicas 0 with a poolSaturation trigger: an empty pool reads saturated (1.0), so the trigger is active again as soon as KEDA idles the model at 0, and KEDA wakes it, every cooldownPeriod; use scaleToZero for a model that rests at zero, or idleReplicas above 0"},
		"poolSaturation trigger idle at 0": {gieXR("autoscaling", signalBlock("", "idleReplicas", int64(0), "triggers", []any{tr("name", "s", "signal", "poolSaturation")}), "monitoring", scraped),
			"spec.autoscaling.idleReplicas 0 with a poolSaturation trigger"},
		"poolSaturation for a group": {pdXR("monitoring", scraped, "inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}}, "vllmConfig.image", "vllm/vllm-openai:v0.12.0",
			"disaggregation.decode.autoscaling", signalBlock("", "triggers", []any{tr("name", "s", "signal", "poolSaturation")})),
			"spec.disaggregation.decode.autoscaling.triggers[0].signal poolSaturation is the saturation of the model's whole pool, prefill and decode pods together, not the decode group's: use engineWaiting, the group's engines' waiting requests, or a query of your own"},
		"scale to zero of a disaggregated model behind the picker": {pdXR("inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}}, "vllmConfig.image", "vllm/vllm-openai:v0.12.0",
			"scaleToZero", zeroBlock()),
			"spec.scaleToZero: the endpoint picker holds a request only while the model's whole pool has no ready endpoint (flow control reads an empty pool as saturated), and prefill and decode pods share that pool"},
		"scale to zero of a disaggregated model behind the router": {pdXR("scaleToZero", zeroBlock()),
			"spec.scaleToZero: a disaggregated model's prefill and decode groups must wake together, and the router sends every request to both"},
	} {
		if got := refusal(t, c.xr); !strings.Contains(got, c.want) {
			t.Errorf("%s: refusal %q, want it to say %q", name, got, c.want)
		}
	}
}

// TestPoolSaturationIdleAboveZero: idleReplicas above 0 with poolSaturation
// is taken (the pool is never empty, so an idle pool reads 0 and stays
// idle).
func TestPoolSaturationIdleAboveZero(t *testing.T) {
	rsp := mustRun(t, req(t, gieXR("autoscaling", signalBlock("poolSaturation", "idleReplicas", int64(1), "minReplicas", int64(2)), "monitoring", scraped), nil, nil))
	so := rsp.objects["engine-m-scaledobject"].(*unstructured.Unstructured)
	if idle, _, _ := unstructured.NestedInt64(so.Object, "spec", "idleReplicaCount"); idle != 1 {
		t.Errorf("idleReplicaCount %d, want 1", idle)
	}
}
