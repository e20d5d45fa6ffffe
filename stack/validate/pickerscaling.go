package validate

import (
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
		case resolve.Or(a.Type, resolve.AutoscalerKEDA) != resolve.AutoscalerKEDA:
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
