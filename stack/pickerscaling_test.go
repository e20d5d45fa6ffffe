package stack

import (
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
