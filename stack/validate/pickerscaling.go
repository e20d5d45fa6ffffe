package validate

import (
	"fmt"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// validateScalingSignal checks each model's autoscaling.signal and the
// signals of its autoscaling.triggers against the stack: pickerRunning and
// poolSaturation read the model's endpoint picker's gauges, selected by
// the labels the picker's ServiceMonitor gives them
// (build/scaling_signal.go). A disaggregated model's groups are checked by
// validateGroupScaling.
func validateScalingSignal(f *Findings, s *resolve.Stack) {
	for _, e := range s.Engines {
		a := e.Cfg.Autoscaling
		if a == nil || e.Role != "" || !ptr.Deref(a.Enabled, true) || resolve.AutoscalerType(a) != resolve.AutoscalerKEDA {
			continue
		}
		if a.Signal != "" {
			checkPickerSignal(f, s, e.Block+".autoscaling.signal", a.Signal)
		}
		for i, t := range a.Triggers {
			if t.Signal != "" && t.Query == "" {
				checkPickerSignal(f, s, fmt.Sprintf("%s.autoscaling.triggers[%d].signal", e.Block, i), t.Signal)
			}
		}
	}
}

// checkPickerSignal checks one signal of a model's autoscaler at field p.
func checkPickerSignal(f *Findings, s *resolve.Stack, p, signal string) {
	if signal == build.SignalEngineWaiting {
		return
	}
	what := map[string]string{
		build.SignalPickerRunning:  "reads the requests the model's endpoint picker has in flight",
		build.SignalPoolSaturation: "reads the saturation of the model's pool, as its endpoint picker's flow control computes it",
	}[signal]
	switch {
	case !resolve.ExtensionOn(s):
		f.errorf("%s %s %s, and the stack routes with the production-stack router (no inferenceExtension): use engineWaiting, or turn inferenceExtension on", p, signal, what)
	case !scrapedByMonitor(s):
		f.errorf("%s %s needs spec.monitoring.serviceMonitor: its query selects the picker's series by the namespace and service labels the picker's ServiceMonitor gives them; set serviceMonitor: {}", p, signal)
	case signal == build.SignalPoolSaturation && s.Extension.ReleaseErr == nil:
		if _, ok := upstream.PickerPoolSaturationMetric(s.Extension.Release); !ok {
			f.errorf("%s poolSaturation: the endpoint picker %s exports no pool saturation gauge (flow control's, from GAIE v1.5.0 and llm-d v0.8.0): use a newer picker image, or pickerRunning", p, s.Extension.Release)
		}
	}
}

// validateTriggers checks an autoscaling block's triggers and fallback as
// written at path, for KEDA as v2.20.2 reads them.
func validateTriggers(f *Findings, path string, a *v1alpha1.Autoscaling) {
	keda := resolve.AutoscalerType(a) == resolve.AutoscalerKEDA
	if a.Signal != "" {
		switch {
		case !keda:
			f.errorf("%s.signal %s is a KEDA trigger's signal, and autoscaling.type %s scales on CPU: use type keda, or remove signal", path, a.Signal, a.Type)
		case a.Query != "":
			f.errorf("%s.signal and %s.query both say what the model scales on: remove one", path, path)
		}
	}
	if len(a.Triggers) > 0 {
		switch {
		case !keda:
			f.errorf("%s.triggers are KEDA triggers, and autoscaling.type %s scales on CPU: use type keda, or remove triggers", path, a.Type)
		case a.Signal != "" || a.Query != "" || a.Threshold != "":
			f.errorf("%s.triggers and %s.signal, query or threshold both say what the model scales on: move them into a trigger of triggers", path, path)
		}
	}
	names := map[string]bool{}
	for i, t := range a.Triggers {
		p := fmt.Sprintf("%s.triggers[%d]", path, i)
		switch {
		case t.Name == "":
			f.errorf("%s.name is required: KEDA tells a ScaledObject's triggers apart by name", p)
		case names[t.Name]:
			// KEDA v2.20.2 refuses the ScaledObject: "triggerName %q is
			// defined multiple times" (apis/keda/v1alpha1/
			// scaletriggers_types.go:74-81).
			f.errorf("%s.name %s is the name of an earlier trigger: KEDA refuses a ScaledObject whose triggers share a name; rename one", p, resolve.ClipQuote(t.Name))
		}
		names[t.Name] = true
		switch {
		case t.Signal == "" && t.Query == "":
			f.errorf("%s needs a signal or a query: set signal (engineWaiting, pickerRunning or poolSaturation) or query", p)
		case t.Signal != "" && t.Query != "":
			f.errorf("%s.signal and %s.query both say what the trigger scales on: remove one", p, p)
		case t.Query != "" && t.Threshold == "":
			f.errorf("%s.threshold is required with query: the query's value per replica at which KEDA scales out", p)
		}
		validateKEDAThreshold(f, p+".threshold", t.Threshold)
	}
	if keda && a.IdleReplicas != nil && *a.IdleReplicas == 0 && usesValueTrigger(a) {
		// KEDA v2.20.2 idles a ScaledObject when no trigger is active
		// (pkg/scaling/executor/scale_scaledobjects.go:98), a prometheus
		// trigger being active above its activationThreshold, 0 by default
		// (pkg/scalers/prometheus_scaler.go:319).
		f.errorf("%s.idleReplicas 0 with a poolSaturation trigger: an empty pool reads saturated (1.0), so the trigger is active again as soon as KEDA idles the model at 0, and KEDA wakes it, every cooldownPeriod; use scaleToZero for a model that rests at zero, or idleReplicas above 0", path)
	}
	validateFallback(f, path, a, keda)
}

// validateFallback checks autoscaling.fallback: KEDA's (v2.20.2 pkg/
// fallback/fallback.go): after failureThreshold failed reads of a trigger's
// metric, KEDA reports that metric as replicas × its threshold, so the
// HorizontalPodAutoscaler asks for replicas; for a Value trigger
// (poolSaturation) it divides by the ready replicas and cannot fall back
// at none (:274-287), which minReplicas 1 and no idleReplicas 0 (refused
// with poolSaturation) leave only while the first replica starts.
func validateFallback(f *Findings, path string, a *v1alpha1.Autoscaling, keda bool) {
	fb := a.Fallback
	if fb == nil {
		return
	}
	if !keda {
		f.errorf("%s.fallback is what KEDA does when it cannot read its metric, and autoscaling.type %s scales on CPU: use type keda, or remove fallback", path, a.Type)
		return
	}
	if a.MaxReplicas != nil && fb.Replicas > *a.MaxReplicas {
		f.errorf("%s.fallback.replicas %d exceeds maxReplicas %d: the HorizontalPodAutoscaler KEDA makes keeps replicas within its bounds, so the fallback would run %d; lower fallback.replicas or raise maxReplicas", path, fb.Replicas, *a.MaxReplicas, *a.MaxReplicas)
	}
}

// usesValueTrigger: a trigger of a is read as KEDA's Value metric.
func usesValueTrigger(a *v1alpha1.Autoscaling) bool {
	if a.Query == "" && a.Signal == build.SignalPoolSaturation {
		return true
	}
	for _, t := range a.Triggers {
		if t.Query == "" && t.Signal == build.SignalPoolSaturation {
			return true
		}
	}
	return false
}

// scrapedByMonitor: the stack composes its ServiceMonitors.
func scrapedByMonitor(s *resolve.Stack) bool {
	m := s.Spec.Monitoring
	return m != nil && resolve.On(m.ServiceMonitor != nil, m.ServiceMonitor.GetEnabled())
}

// modelWideSignals are signals of the whole model, which a group of a
// disaggregated model cannot scale on: the picker counts the model's
// requests, and its pool holds both groups' pods.
var modelWideSignals = map[string]string{
	build.SignalPickerRunning:  "counts the model's requests at its picker,",
	build.SignalPoolSaturation: "is the saturation of the model's whole pool, prefill and decode pods together,",
}

// validateGroupScaling checks the autoscaling of a disaggregated model's
// groups (p is the model's disaggregation block): the model's own
// autoscaling would scale both groups alike and is refused; each group's
// scales on its own engines.
func validateGroupScaling(f *Findings, s *resolve.Stack, p string, groups []resolve.Engine) {
	for _, l := range groups[0].Layers {
		if a := l.Cfg.Autoscaling; a != nil && ptr.Deref(a.Enabled, true) && !strings.Contains(l.Path, ".disaggregation.") {
			f.errorf("%s.autoscaling scales one Deployment per model and a disaggregated model has two: move it to %s.prefill.autoscaling and %s.decode.autoscaling, each group on its own signal, or set each group's replicas", l.Path, p, p)
			return
		}
	}
	for _, e := range groups {
		a := e.Cfg.Autoscaling
		if a == nil || !ptr.Deref(a.Enabled, true) {
			continue
		}
		g := p + "." + e.Role + ".autoscaling"
		if e.Transfer == resolve.TransferLMCache && e.Role == resolve.RoleDecode && ptr.Deref(a.MaxReplicas, 1) > 1 {
			// As decode replicas above 1 are (releases.go).
			f.errorf("%s.maxReplicas %d: with transfer lmcache the prefill engine pushes the KV cache to the decode Service, which picks any decode pod, while the router decodes on one of them: keep one decode engine, or use transfer nixl", g, *a.MaxReplicas)
		}
		if resolve.AutoscalerType(a) != resolve.AutoscalerKEDA {
			continue
		}
		if what, ok := modelWideSignals[a.Signal]; ok {
			f.errorf("%s.signal %s %s not the %s group's: remove signal, the group then scales on its engines' waiting requests", g, a.Signal, what, e.Role)
		}
		// Only the user's own queries need no ServiceMonitor.
		ownQueries := a.Query != "" || len(a.Triggers) > 0
		for i, t := range a.Triggers {
			if what, ok := modelWideSignals[t.Signal]; ok && t.Query == "" {
				f.errorf("%s.triggers[%d].signal %s %s not the %s group's: use engineWaiting, the group's engines' waiting requests, or a query of your own", g, i, t.Signal, what, e.Role)
			}
			ownQueries = ownQueries && t.Query != ""
		}
		if !ownQueries && !scrapedByMonitor(s) {
			f.errorf("%s needs spec.monitoring.serviceMonitor: the group's query selects its engines' series by the service label their ServiceMonitor gives them (both groups serve one model name); set serviceMonitor: {}, or a query of your own", g)
		}
	}
}

// disaggregatedZeroRefusal says why a disaggregated model cannot scale to
// zero behind its routing layer (p is its scaleToZero field).
//
// Behind the endpoint picker: its flow control holds a request only while
// the whole pool is saturated, and an empty pool reads 1.0
// (utilization/detector.go:116-118@GAIE v1.5.0, :129@llm-d v0.10.0); one
// pool holds both groups' pods, so the first group ready ends the hold,
// and a request dispatched while decode still starts finds no decode
// endpoint (llm-d's P/D profiles pick a decode pod for every request).
// KEDA wakes each group's ScaledObject on its own.
func disaggregatedZeroRefusal(s *resolve.Stack, p string) string {
	if resolve.ExtensionOn(s) {
		return p + ": the endpoint picker holds a request only while the model's whole pool has no ready endpoint (flow control reads an empty pool as saturated), and prefill and decode pods share that pool: the first group ready ends the hold, and a request dispatched while the decode group still starts finds no decode endpoint (KEDA wakes each group's ScaledObject on its own); remove scaleToZero (scale each group with disaggregation.prefill.autoscaling and disaggregation.decode.autoscaling, minReplicas 1), or disaggregation"
	}
	return p + ": a disaggregated model's prefill and decode groups must wake together, and the router sends every request to both: KEDA would wake one group at a time; remove scaleToZero or disaggregation"
}
