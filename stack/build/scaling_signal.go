package build

import (
	"fmt"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// The signals autoscaling.signal names (the XRD's enum).
const (
	SignalEngineWaiting = "engineWaiting"
	SignalPickerRunning = "pickerRunning"
)

// defaultRunningThreshold is the requests in flight per replica that
// pickerRunning scales out at: llm-d's KEDA guide on the picker's metrics
// scales at 16 running requests (BEYOND.md §10, guides/workload-autoscaling/
// keda-epp).
const defaultRunningThreshold = "16"

// signalQuery is the query of the model's autoscaling signal and its
// default threshold: vLLM's waiting requests of the model's engines, or the
// requests its endpoint picker has in flight, under the name the picker's
// release exports (upstream.PickerRunningMetric; metrics.tsv), selected by
// the labels the Prometheus Operator gives what the picker's ServiceMonitor
// scrapes (the gauge has no pool label; its model_name is the request's
// model, which also names adapters: the picker's Service holds them all).
// A disaggregated model's group scales on its own engines' waiting
// requests (disaggregation.<group>.autoscaling).
// tools/promql's TestTriggersEvaluated has Prometheus evaluate both.
func signalQuery(s *resolve.Stack, e resolve.Engine) (query, threshold string) {
	if e.Role != "" {
		// A group of a disaggregated model: both groups serve one model
		// name, so the group's engines are told apart by their Service.
		return fmt.Sprintf(`sum(vllm:num_requests_waiting{namespace=%q,service=%q})`, s.Namespace, s.Names.EngineService(e.ID)), defaultQueueThreshold
	}
	if resolve.Or(e.Cfg.Autoscaling.Signal, SignalEngineWaiting) == SignalPickerRunning && resolve.ExtensionOn(s) {
		return fmt.Sprintf(`sum(%s{namespace=%q,service=%q})`, upstream.PickerRunningMetric(s.Extension.Release), s.Namespace, s.Names.Picker(e.ID)),
			defaultRunningThreshold
	}
	return fmt.Sprintf(`sum(vllm:num_requests_waiting{model_name=%q,namespace=%q})`, e.Served, s.Namespace), defaultQueueThreshold
}
