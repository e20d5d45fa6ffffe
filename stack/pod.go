package stack

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// schedule places the pod: node selection, tolerations, affinity, runtime
// class, priority and scheduler.
func schedule(pod *corev1.PodSpec, s *v1alpha1.Scheduling) {
	pod.NodeSelector = s.NodeSelector
	pod.Tolerations = s.Tolerations
	pod.Affinity = s.Affinity
	if s.RuntimeClassName != "" {
		pod.RuntimeClassName = ptr.To(s.RuntimeClassName)
	}
	pod.PriorityClassName = s.PriorityClassName
	pod.SchedulerName = s.SchedulerName
}

// podIdentity sets who the engine pod runs as. vLLM never calls the
// Kubernetes API, so no API token is mounted unless asked for.
func podIdentity(pod *corev1.PodSpec, p *v1alpha1.PodConfig) {
	pod.SecurityContext = p.SecurityContext
	pod.ServiceAccountName = p.ServiceAccountName
	pod.AutomountServiceAccountToken = ptr.To(enabled(p.AutomountServiceAccountToken))
}

// withExtraLabels adds the user's pod labels to the stack's. Validation
// refuses extra labels that would replace the stack's, which the router and
// the selectors rely on.
func withExtraLabels(l, extra map[string]string) map[string]string {
	if len(extra) == 0 {
		return l
	}
	out := make(map[string]string, len(l)+len(extra))
	maps.Copy(out, extra)
	maps.Copy(out, l)
	return out
}

// tune applies the user's probe overrides to a default probe.
func tune(p *corev1.Probe, o *v1alpha1.Probe) *corev1.Probe {
	if o == nil {
		return p
	}
	for _, f := range []struct {
		dst *int32
		src *int32
	}{
		{&p.InitialDelaySeconds, o.InitialDelaySeconds},
		{&p.PeriodSeconds, o.PeriodSeconds},
		{&p.TimeoutSeconds, o.TimeoutSeconds},
		{&p.FailureThreshold, o.FailureThreshold},
	} {
		if f.src != nil {
			*f.dst = *f.src
		}
	}
	return p
}
