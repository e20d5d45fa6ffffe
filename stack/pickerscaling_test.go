package stack

import (
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func signalBlock(signal string, kv ...any) map[string]any {
	a := map[string]any{"maxReplicas": int64(4), "prometheusAddress": promAddr}
	if signal != "" {
		a["signal"] = signal
	}
	for i := 0; i < len(kv); i += 2 {
		a[kv[i].(string)] = kv[i+1]
	}
	return a
}

var scraped = map[string]any{"serviceMonitor": map[string]any{}}

// trigger is the only trigger of the model's ScaledObject.
func trigger(t *testing.T, rsp response) map[string]any {
	t.Helper()
	so := rsp.objects["engine-m-scaledobject"].(*unstructured.Unstructured)
	tr, _, _ := unstructured.NestedSlice(so.Object, "spec", "triggers")
	if len(tr) != 1 {
		t.Fatalf("%d triggers", len(tr))
	}
	md, _, _ := unstructured.NestedStringMap(tr[0].(map[string]any), "metadata")
	return map[string]any{"query": md["query"], "threshold": md["threshold"]}
}

// TestPickerRunningSignal: autoscaling.signal pickerRunning scales on the
// requests the model's picker has in flight, under the name each picker
// release exports (metrics.tsv), over the picker's Service, at 16 a
// replica unless threshold says otherwise; engineWaiting is the default.
func TestPickerRunningSignal(t *testing.T) {
	for image, want := range map[string]string{
		"registry.k8s.io/gateway-api-inference-extension/epp:v1.3.0": "inference_objective_running_requests",
		"registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0": "inference_objective_running_requests",
		"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.6.0":          "inference_objective_running_requests",
		"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.8.0":          "inference_objective_running_requests",
		"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0":          "llm_d_epp_request_running",
		"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0":         "llm_d_epp_request_running",
	} {
		xr := gieXR("autoscaling", signalBlock("pickerRunning"), "monitoring", scraped, "inferenceExtension.picker.image", image)
		got := trigger(t, mustRun(t, req(t, xr, nil, nil)))
		if w := map[string]any{"query": `sum(` + want + `{namespace="llm",service="s-m-epp"})`, "threshold": "16"}; got["query"] != w["query"] || got["threshold"] != w["threshold"] {
			t.Errorf("%s: trigger %v, want %v", image, got, w)
		}
	}
	xr := gieXR("autoscaling", signalBlock("pickerRunning", "threshold", "8"), "monitoring", scraped)
	if got := trigger(t, mustRun(t, req(t, xr, nil, nil))); got["threshold"] != "8" {
		t.Errorf("threshold %v, want 8", got["threshold"])
	}
	for _, signal := range []string{"", "engineWaiting"} {
		xr := gieXR("autoscaling", signalBlock(signal), "monitoring", scraped)
		want := map[string]any{"query": `sum(vllm:num_requests_waiting{model_name="org/m",namespace="llm"})`, "threshold": "5"}
		if got := trigger(t, mustRun(t, req(t, xr, nil, nil))); got["query"] != want["query"] || got["threshold"] != want["threshold"] {
			t.Errorf("signal %q: trigger %v, want %v", signal, got, want)
		}
	}
}

// TestScalingSignalRefused: each combination a signal cannot work in is
// refused, naming the field and the fix.
func TestScalingSignalRefused(t *testing.T) {
	for name, c := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"pickerRunning behind the router": {with("autoscaling", signalBlock("pickerRunning"), "monitoring", scraped),
			"spec.autoscaling.signal pickerRunning reads the requests the model's endpoint picker has in flight, and the stack routes with the production-stack router (no inferenceExtension): use engineWaiting, or turn inferenceExtension on"},
		"pickerRunning unscraped": {gieXR("autoscaling", signalBlock("pickerRunning")),
			"spec.autoscaling.signal pickerRunning needs spec.monitoring.serviceMonitor: its query selects the picker's series by the namespace and service labels the picker's ServiceMonitor gives them; set serviceMonitor: {}"},
		"with query": {gieXR("autoscaling", signalBlock("pickerRunning", "query", "sum(x)"), "monitoring", scraped),
			"spec.autoscaling.signal and spec.autoscaling.query both say what the model scales on: remove one"},
		"with hpa": {gieXR("autoscaling", signalBlock("engineWaiting", "type", "hpa"), "monitoring", scraped),
			"spec.autoscaling.signal engineWaiting is a KEDA trigger's signal, and autoscaling.type hpa scales on CPU: use type keda, or remove signal"},
	} {
		if got := refusal(t, c.xr); !strings.Contains(got, c.want) {
			t.Errorf("%s: refusal %q, want it to say %q", name, got, c.want)
		}
	}
}

// TestGroupScaling: each group of a disaggregated model scales on its own
// engines' waiting requests, selected by the group's Service, in a
// ScaledObject of its own (or a CPU autoscaler); the groups' Deployments
// leave their replicas to it; a group may keep fixed replicas.
func TestGroupScaling(t *testing.T) {
	xr := pdXR("monitoring", scraped,
		"disaggregation.prefill.autoscaling", signalBlock("", "threshold", "2"),
		"disaggregation.decode.autoscaling", map[string]any{"type": "hpa", "maxReplicas": int64(3)})
	rsp := mustRun(t, req(t, xr, nil, nil))
	so := rsp.objects["engine-m-prefill-scaledobject"].(*unstructured.Unstructured)
	target, _, _ := unstructured.NestedString(so.Object, "spec", "scaleTargetRef", "name")
	tr, _, _ := unstructured.NestedSlice(so.Object, "spec", "triggers")
	md, _, _ := unstructured.NestedStringMap(tr[0].(map[string]any), "metadata")
	if target != "s-m-prefill-deployment-vllm" || md["query"] != `sum(vllm:num_requests_waiting{namespace="llm",service="s-m-prefill-engine-service"})` || md["threshold"] != "2" {
		t.Errorf("prefill ScaledObject: target %s, trigger %v", target, md)
	}
	if _, ok := rsp.objects["engine-m-decode-hpa"]; !ok {
		t.Errorf("no HorizontalPodAutoscaler for the decode group; objects %v", keys(rsp))
	}
	for _, k := range []string{"engine-m-prefill", "engine-m-decode"} {
		if d := desired(t, rsp, k, &appsv1.Deployment{}); d.Spec.Replicas != nil {
			t.Errorf("%s sets replicas %d: its autoscaler owns them", k, *d.Spec.Replicas)
		}
	}
	// Only prefill scales: decode keeps its replicas.
	rsp = mustRun(t, req(t, pdXR("monitoring", scraped, "disaggregation.prefill.autoscaling", signalBlock(""), "disaggregation.decode.replicas", int64(2)), nil, nil))
	if d := desired(t, rsp, "engine-m-decode", &appsv1.Deployment{}); d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("decode replicas %v, want 2", d.Spec.Replicas)
	}
	if _, ok := rsp.objects["engine-m-decode-scaledobject"]; ok {
		t.Error("a ScaledObject for the decode group, which sets none")
	}
}

// TestGroupScalingRefused: what a group's autoscaler cannot do is refused,
// naming the group's field.
func TestGroupScalingRefused(t *testing.T) {
	for name, c := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"pickerRunning": {pdXR("monitoring", scraped, "disaggregation.decode.autoscaling", signalBlock("pickerRunning")),
			"spec.disaggregation.decode.autoscaling.signal pickerRunning counts the model's requests at its picker, not the decode group's: remove signal, the group then scales on its engines' waiting requests"},
		"unscraped": {pdXR("disaggregation.prefill.autoscaling", signalBlock("")),
			"spec.disaggregation.prefill.autoscaling needs spec.monitoring.serviceMonitor: the group's query selects its engines' series by the service label their ServiceMonitor gives them (both groups serve one model name); set serviceMonitor: {}, or a query of your own"},
		"no maxReplicas": {pdXR("monitoring", scraped, "disaggregation.prefill.autoscaling", map[string]any{"prometheusAddress": promAddr}),
			"spec.disaggregation.prefill.autoscaling.maxReplicas is required"},
		"decode scaled out under transfer lmcache": {pdXR("monitoring", scraped, "disaggregation.transfer", "lmcache", "vllmConfig.image", "lmcache/vllm-openai:2025-05-27-v1",
			"disaggregation.decode.autoscaling", map[string]any{"type": "hpa", "maxReplicas": int64(2)}),
			"spec.disaggregation.decode.autoscaling.maxReplicas 2: with transfer lmcache the prefill engine pushes the KV cache to the decode Service, which picks any decode pod, while the router decodes on one of them: keep one decode engine, or use transfer nixl"},
	} {
		if got := refusal(t, c.xr); !strings.Contains(got, c.want) {
			t.Errorf("%s: refusal %q, want it to say %q", name, got, c.want)
		}
	}
	// A query of the user's own needs no ServiceMonitor.
	if got := refusal(t, pdXR("disaggregation.prefill.autoscaling", signalBlock("", "query", "sum(x)"))); got != "" {
		t.Errorf("refused: %s", got)
	}
}

// TestScalingBehavior: autoscaling.behavior becomes the ScaledObject's
// advanced.horizontalPodAutoscalerConfig.behavior (KEDA passes it to its
// HorizontalPodAutoscaler) or the HorizontalPodAutoscaler's own, and
// initialCooldownPeriod KEDA's; both left out when unset.
func TestScalingBehavior(t *testing.T) {
	behavior := map[string]any{
		"scaleUp":   map[string]any{"stabilizationWindowSeconds": int64(0), "policies": []any{map[string]any{"type": "Pods", "value": int64(1), "periodSeconds": int64(60)}}},
		"scaleDown": map[string]any{"stabilizationWindowSeconds": int64(300), "selectPolicy": "Min"},
	}
	rsp := mustRun(t, req(t, with("autoscaling", signalBlock("", "behavior", behavior, "initialCooldownPeriod", int64(900))), nil, nil))
	so := rsp.objects["engine-m-scaledobject"].(*unstructured.Unstructured)
	got, _, _ := unstructured.NestedMap(so.Object, "spec", "advanced", "horizontalPodAutoscalerConfig", "behavior")
	if diff := cmp.Diff(behavior, got); diff != "" {
		t.Errorf("ScaledObject behavior (-want +got):\n%s", diff)
	}
	if ic, _, _ := unstructured.NestedInt64(so.Object, "spec", "initialCooldownPeriod"); ic != 900 {
		t.Errorf("initialCooldownPeriod %d, want 900", ic)
	}
	rsp = mustRun(t, req(t, with("autoscaling", map[string]any{"type": "hpa", "maxReplicas": int64(3), "behavior": behavior}), nil, nil))
	h := desired(t, rsp, "engine-m-hpa", &autoscalingv2.HorizontalPodAutoscaler{})
	b := h.Spec.Behavior
	if b == nil || *b.ScaleDown.StabilizationWindowSeconds != 300 || *b.ScaleDown.SelectPolicy != autoscalingv2.MinChangePolicySelect || b.ScaleDown.Policies != nil ||
		len(b.ScaleUp.Policies) != 1 || b.ScaleUp.Policies[0] != (autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}) {
		t.Errorf("HPA behavior %+v", b)
	}
	rsp = mustRun(t, req(t, with("autoscaling", signalBlock("")), nil, nil))
	so = rsp.objects["engine-m-scaledobject"].(*unstructured.Unstructured)
	for _, f := range []string{"advanced", "initialCooldownPeriod"} {
		if _, ok := so.Object["spec"].(map[string]any)[f]; ok {
			t.Errorf("spec.%s rendered, not set", f)
		}
	}
	if got := refusal(t, with("autoscaling", signalBlock("", "behavior", map[string]any{"scaleUp": map[string]any{"stabilizationWindowSeconds": int64(3601)}}))); !strings.Contains(got, "stabilizationWindowSeconds") {
		t.Errorf("a window above 3600 s: refusal %q", got)
	}
}
