package build

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

func strategy(kind string, ru *v1alpha1.RollingUpdate) appsv1.DeploymentStrategy {
	if kind == string(appsv1.RecreateDeploymentStrategyType) {
		return appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	}
	// A new engine pod must be ready before an old one stops: with
	// maxUnavailable 0 the model keeps serving through a rollout.
	r := &appsv1.RollingUpdateDeployment{
		MaxSurge:       ptr.To(intstr.FromInt32(1)),
		MaxUnavailable: ptr.To(intstr.FromInt32(0)),
	}
	if ru != nil && ru.MaxSurge != nil {
		r.MaxSurge = ptr.To(*ru.MaxSurge)
	}
	if ru != nil && ru.MaxUnavailable != nil {
		r.MaxUnavailable = ptr.To(*ru.MaxUnavailable)
	}
	return appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: r}
}

// secretEnv is an environment variable read from a Secret, so the value
// never appears in the Deployment.
func secretEnv(name string, ref *v1alpha1.SecretKeySelector) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key},
	}}
}

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
	pod.AutomountServiceAccountToken = ptr.To(resolve.Enabled(p.AutomountServiceAccountToken))
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
