package stack

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Scale to zero (scaleToZero): a KEDA ScaledObject with minReplicaCount 0
// on the model's engine Deployment. Two triggers: one that wakes the model
// and keeps it up while it is used (with the inference extension the
// requests its picker holds or the engines run; with the router the
// requests the router receives for the model), and one that scales it out
// on the engines' waiting requests. With the inference extension the
// picker's flow control holds the requests that come while the model is
// at zero, for up to the cold-start time (GAIE.md §g).
const (
	defaultIdleSeconds = int32(600)
	// routerIncomingAt is the first router that counts
	// vllm:num_incoming_requests, also for a model with no ready engine
	// (BEYOND.md §4, §9).
	routerIncomingMinor = 8
)

// routerIncomingAt is the first router release with
// vllm:num_incoming_requests_total.
var routerIncomingAt = upstream.V(0, 1, routerIncomingMinor)

// scaleToZero is the model's scaleToZero block when enabled, else nil.
func scaleToZero(e engine) *v1alpha1.ScaleToZero {
	z := e.cfg.ScaleToZero
	if z == nil || !ptr.Deref(z.Enabled, true) {
		return nil
	}
	return z
}

// startupBudget is the seconds the engine's startup probe lets it take to
// start: the start-up budget by the model's size, or probes.startup.
func startupBudget(e engine) int64 {
	p := startupProbe(e)
	return int64(p.InitialDelaySeconds) + int64(p.PeriodSeconds)*int64(p.FailureThreshold)
}

// coldStartSeconds is how long a request may wait for the model to start
// from zero: coldStartSeconds, else the start-up budget.
func coldStartSeconds(e engine) int64 {
	if z := scaleToZero(e); z != nil && z.ColdStartSeconds != nil {
		return int64(*z.ColdStartSeconds)
	}
	return startupBudget(e)
}

// pickerRequestTTL is the request TTL of the model's picker: the cold-start
// time when the model scales to zero, else 0 (flow control off).
func pickerRequestTTL(e engine) int64 {
	if scaleToZero(e) == nil {
		return 0
	}
	return coldStartSeconds(e)
}

// scaleToZeroObject is the model's ScaledObject.
func scaleToZeroObject(s *resolvedStack, e engine) *unstructured.Unstructured {
	z := scaleToZero(e)
	threshold := or(z.Threshold, defaultQueueThreshold)
	waiting := fmt.Sprintf(`sum(vllm:num_requests_waiting{model_name=%q,namespace=%q})`, e.served, s.namespace)
	trigger := func(name, query, threshold string) any {
		return map[string]any{
			"type": "prometheus", "name": name,
			"metadata": map[string]any{"serverAddress": z.PrometheusAddress, "query": query, "threshold": threshold},
		}
	}
	spec := map[string]any{
		"scaleTargetRef":  map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": s.names.engineDeployment(e.id)},
		"minReplicaCount": int64(0),
		"maxReplicaCount": int64(*z.MaxReplicas),
		"pollingInterval": int64(ptr.Deref(z.PollingInterval, defaultPollingInterval)),
		"cooldownPeriod":  int64(ptr.Deref(z.IdleSeconds, defaultIdleSeconds)),
		"triggers": []any{
			trigger("wake", wakeQuery(s, e), "1"),
			trigger("waiting", waiting, threshold),
		},
	}
	return crd(s, "keda.sh/v1alpha1", "ScaledObject", s.names.engineScaledObject(e.id), engineLabels(s.name, e), spec)
}

// wakeQuery is 1 while the model is in use or asked for, else 0: with the
// inference extension, requests its picker holds for the pool (the queue
// gauge, summed over its series: one per fairness ID, priority and model
// name) or the engines run; with the router, requests it received for the
// model in the last minute (counted also when no engine is ready). With
// threshold 1 it asks for one replica; the waiting trigger scales out.
func wakeQuery(s *resolvedStack, e engine) string {
	if extensionOn(s) {
		return fmt.Sprintf(`(sum(%s{namespace=%q,inference_pool=%q}) or vector(0)) + (sum(vllm:num_requests_running{model_name=%q,namespace=%q}) or vector(0)) > bool 0`,
			upstream.PickerQueueMetric(s.extension.release), s.namespace, s.names.inferencePool(e.id), e.served, s.namespace)
	}
	return fmt.Sprintf(`sum(rate(vllm:num_incoming_requests_total{model=%q,namespace=%q}[1m])) > bool 0`, e.served, s.namespace)
}

// validateScaleToZero checks each model's scaleToZero against its engine
// and the routing layer.
func validateScaleToZero(f *Findings, s *resolvedStack) {
	warned := false
	for _, e := range s.engines {
		z := e.cfg.ScaleToZero
		if z == nil {
			continue
		}
		p := e.block + ".scaleToZero"
		if !ptr.Deref(z.Enabled, true) {
			continue
		}
		if e.role != "" {
			f.errorf("%s: a disaggregated model's prefill and decode groups must wake together, and the router sends every request to both: KEDA would wake one group at a time; remove scaleToZero or disaggregation", p)
			continue
		}
		if _, ok := multiNode(e); ok {
			f.errorf("%s: a multi-node model is a LeaderWorkerSet, whose groups the stack does not scale to zero yet: remove scaleToZero or multiNode", p)
			continue
		}
		if a := e.cfg.Autoscaling; a != nil && ptr.Deref(a.Enabled, true) {
			f.errorf("%s and %s.autoscaling both scale the model: scaleToZero composes its own KEDA ScaledObject (maxReplicas, threshold, prometheusAddress); remove autoscaling", p, e.block)
		}
		if z.MaxReplicas == nil {
			f.errorf("%s.maxReplicas is required: set the most replicas the model may scale out to", p)
		}
		if z.PrometheusAddress == "" {
			f.errorf("%s.prometheusAddress is required: KEDA reads the model's demand from the Prometheus that scrapes the engines (and the endpoint pickers or the router)", p)
		}
		validateKEDAThreshold(f, p+".threshold", z.Threshold)
		validatePrometheusAddress(f, p+".prometheusAddress", z.PrometheusAddress)
		budget := startupBudget(e)
		if z.ColdStartSeconds != nil && int64(*z.ColdStartSeconds) < budget {
			f.errorf("%s.coldStartSeconds %d is shorter than the model's start-up budget of %d seconds (its startup probe's, by its size): a request could be refused while the engine still starts; raise it, or lower probes.startup", p, *z.ColdStartSeconds, budget)
		}
		if !extensionOn(s) {
			if s.router.versionErr == nil && s.router.version.version.Less(routerIncomingAt) {
				f.errorf("%s needs router %s or later, the first that counts vllm:num_incoming_requests, which wakes the model, and the router is %s: use a newer router image", p, routerIncomingAt, s.router.version)
			}
			if !warned {
				warned = true
				f.warnf("%s: the production-stack router does not hold requests: while the model is at zero the first requests get 503 (\"temporarily unavailable\") until an engine is ready, up to %d seconds; clients must retry. With inferenceExtension the endpoint picker holds them until the engine is ready", p, coldStartSeconds(e))
			}
			continue
		}
		if x := s.extension; x.releaseErr == nil && !upstream.PickerFlowControl(x.release) {
			f.errorf("%s: the endpoint picker %s sets no request TTL (flow control's defaultRequestTTL comes with GAIE v1.4.0 and llm-d v0.7.0): use a newer picker image", p, x.release)
		}
	}
}

// ScaledObjectFields are the fields that make the stack compose KEDA
// ScaledObjects, as a message names them: autoscaling.type keda and
// scaleToZero.
func (s *Stack) ScaledObjectFields() string { return scaledObjectFields(s.r) }

// scaledObjectFields are the fields that make a stack compose KEDA
// ScaledObjects (ScaledObjectFields).
func scaledObjectFields(s *resolvedStack) string {
	var keda, zero bool
	for _, e := range s.engines {
		switch {
		case scaleToZero(e) != nil:
			zero = true
		case autoscaled(e) && or(e.cfg.Autoscaling.Type, autoscalerKEDA) == autoscalerKEDA:
			keda = true
		}
	}
	switch {
	case zero && keda:
		return "autoscaling.type keda and scaleToZero"
	case zero:
		return "scaleToZero"
	}
	return "autoscaling.type keda"
}
