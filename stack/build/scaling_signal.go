package build

import (
	"fmt"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// The signals autoscaling.signal and autoscaling.triggers[].signal name
// (the XRD's enum).
const (
	SignalEngineWaiting  = "engineWaiting"
	SignalPickerRunning  = "pickerRunning"
	SignalPoolSaturation = "poolSaturation"
)

// defaultRunningThreshold is the requests in flight per replica that
// pickerRunning scales out at: llm-d's KEDA guide on the picker's metrics
// scales at 16 running requests (BEYOND.md §10, guides/workload-autoscaling/
// keda-epp).
const defaultRunningThreshold = "16"

// defaultSaturationThreshold is the pool saturation poolSaturation scales
// out at: llm-d's KEDA guide scales on max(…pool_saturation) at 0.7
// (BEYOND.md §10), below 1.0, where flow control stops dispatching and
// holds requests (llm-d-router docs/metrics.md:243-275@v0.10.0).
const defaultSaturationThreshold = "0.7"

// kedaValueMetric is KEDA's metricType for a trigger whose value is the
// pool's, not a sum over replicas: the HorizontalPodAutoscaler then asks
// for ceil(current replicas × value / threshold), as for CPU utilisation,
// where the default AverageValue asks for ceil(value / threshold)
// whatever the replicas (KEDA v2.20.2 apis/keda/v1alpha1/
// scaletriggers_types.go:40, the autoscaling/v2 MetricTargetType).
const kedaValueMetric = "Value"

// A kedaTrigger is one prometheus trigger of a ScaledObject.
type kedaTrigger struct {
	name, query, threshold, metricType string
}

// engineTriggers are the triggers of the model's ScaledObject: one, on
// autoscaling.query or autoscaling.signal (unnamed, as before triggers
// came), or one per autoscaling.triggers element, under its name.
func engineTriggers(s *resolve.Stack, e resolve.Engine) []kedaTrigger {
	a := e.Cfg.Autoscaling
	if len(a.Triggers) == 0 {
		if a.Query != "" {
			return []kedaTrigger{{query: a.Query, threshold: resolve.Or(a.Threshold, defaultQueueThreshold)}}
		}
		t := signalTrigger(s, e, a.Signal)
		t.threshold = resolve.Or(a.Threshold, t.threshold)
		return []kedaTrigger{t}
	}
	var out []kedaTrigger
	for _, tr := range a.Triggers {
		t := kedaTrigger{query: tr.Query}
		if tr.Query == "" {
			t = signalTrigger(s, e, tr.Signal)
		}
		t.name, t.threshold = tr.Name, resolve.Or(tr.Threshold, t.threshold)
		out = append(out, t)
	}
	return out
}

// signalTrigger is the query of a signal, its default threshold and
// metric type: vLLM's waiting requests of the model's engines, the
// requests its endpoint picker has in flight, under the name the picker's
// release exports (upstream.PickerRunningMetric; metrics.tsv), selected by
// the labels the Prometheus Operator gives what the picker's ServiceMonitor
// scrapes (the gauge has no pool label; its model_name is the request's
// model, which also names adapters: the picker's Service holds them all),
// or the saturation of the model's pool as the picker's flow control
// computes it, the highest of the picker's replicas (each runs its own
// flow control over the same pool; upstream.PickerPoolSaturationMetric).
// A disaggregated model's group scales on its own engines' waiting
// requests (disaggregation.<group>.autoscaling).
// tools/promql's TestTriggersEvaluated has Prometheus evaluate each.
func signalTrigger(s *resolve.Stack, e resolve.Engine, signal string) kedaTrigger {
	if e.Role != "" {
		// A group of a disaggregated model: both groups serve one model
		// name, so the group's engines are told apart by their Service.
		return kedaTrigger{query: fmt.Sprintf(`sum(vllm:num_requests_waiting{namespace=%q,service=%q})`, s.Namespace, s.Names.EngineService(e.ID)), threshold: defaultQueueThreshold}
	}
	if resolve.ExtensionOn(s) {
		switch signal {
		case SignalPickerRunning:
			return kedaTrigger{query: fmt.Sprintf(`sum(%s{namespace=%q,service=%q})`, upstream.PickerRunningMetric(s.Extension.Release), s.Namespace, s.Names.Picker(e.ID)),
				threshold: defaultRunningThreshold}
		case SignalPoolSaturation:
			metric, _ := upstream.PickerPoolSaturationMetric(s.Extension.Release)
			return kedaTrigger{query: fmt.Sprintf(`max(%s{namespace=%q,inference_pool=%q})`, metric, s.Namespace, s.Names.InferencePool(e.ID)),
				threshold: defaultSaturationThreshold, metricType: kedaValueMetric}
		}
	}
	return kedaTrigger{query: fmt.Sprintf(`sum(vllm:num_requests_waiting{model_name=%q,namespace=%q})`, e.Served, s.Namespace), threshold: defaultQueueThreshold}
}

// ScalesOnPoolSaturation: the model's KEDA autoscaler reads its pool's
// saturation, which the picker records only with flow control on.
func ScalesOnPoolSaturation(e resolve.Engine) bool {
	a := e.Cfg.Autoscaling
	if e.ScaleToZero != nil || a == nil || !ptr.Deref(a.Enabled, true) || resolve.AutoscalerType(a) != resolve.AutoscalerKEDA || a.Query != "" {
		return false
	}
	if len(a.Triggers) == 0 {
		return a.Signal == SignalPoolSaturation
	}
	for _, t := range a.Triggers {
		if t.Query == "" && t.Signal == SignalPoolSaturation {
			return true
		}
	}
	return false
}

// kedaTriggers is triggers as the ScaledObject holds them.
func kedaTriggers(address string, ts []kedaTrigger) []any {
	var out []any
	for _, t := range ts {
		m := map[string]any{
			"type":     "prometheus",
			"metadata": map[string]any{"serverAddress": address, "query": t.query, "threshold": t.threshold},
		}
		if t.name != "" {
			m["name"] = t.name
		}
		if t.metricType != "" {
			m["metricType"] = t.metricType
		}
		out = append(out, m)
	}
	return out
}
