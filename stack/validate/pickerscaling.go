package validate

import (
	"strings"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// validateScalingSignal checks each model's autoscaling.signal against its
// autoscaler and the stack: pickerRunning reads the model's endpoint
// picker's gauge, selected by the labels the picker's ServiceMonitor gives
// it (build/scaling_signal.go).
func validateScalingSignal(f *Findings, s *resolve.Stack) {
	for _, e := range s.Engines {
		a := e.Cfg.Autoscaling
		if a == nil || a.Signal == "" || !ptr.Deref(a.Enabled, true) {
			continue
		}
		p := e.Block + ".autoscaling.signal"
		switch {
		case resolve.AutoscalerType(a) != resolve.AutoscalerKEDA:
			f.errorf("%s %s is a KEDA trigger's signal, and autoscaling.type %s scales on CPU: use type keda, or remove signal", p, a.Signal, a.Type)
		case a.Query != "":
			f.errorf("%s and %s.autoscaling.query both say what the model scales on: remove one", p, e.Block)
		case a.Signal != build.SignalPickerRunning:
		case !resolve.ExtensionOn(s):
			f.errorf("%s pickerRunning reads the requests the model's endpoint picker has in flight, and the stack routes with the production-stack router (no inferenceExtension): use engineWaiting, or turn inferenceExtension on", p)
		case !scrapedByMonitor(s):
			f.errorf("%s pickerRunning needs spec.monitoring.serviceMonitor: its query selects the picker's series by the namespace and service labels the picker's ServiceMonitor gives them; set serviceMonitor: {}", p)
		}
	}
}

// scrapedByMonitor: the stack composes its ServiceMonitors.
func scrapedByMonitor(s *resolve.Stack) bool {
	m := s.Spec.Monitoring
	return m != nil && resolve.On(m.ServiceMonitor != nil, m.ServiceMonitor.GetEnabled())
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
		switch {
		case a.Signal == build.SignalPickerRunning:
			f.errorf("%s.signal pickerRunning counts the model's requests at its picker, not the %s group's: remove signal, the group then scales on its engines' waiting requests", g, e.Role)
		case a.Query == "" && !scrapedByMonitor(s):
			f.errorf("%s needs spec.monitoring.serviceMonitor: the group's query selects its engines' series by the service label their ServiceMonitor gives them (both groups serve one model name); set serviceMonitor: {}, or a query of your own", g)
		}
	}
}
