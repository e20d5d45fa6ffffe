package build

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// EngineDeployment builds the Deployment of one model's vLLM engines.
func engineDeployment(s *resolve.Stack, e resolve.Engine) *appsv1.Deployment {
	podLabels := EngineLabels(s.Name, e)
	tmpl := engineTemplate(s, e)
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: s.Meta(s.Names.EngineDeployment(e.ID), podLabels),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(*e.Cfg.Replicas),
			Selector: &metav1.LabelSelector{MatchLabels: engineSelector(s.Name, e)},
			Strategy: strategy(e.Cfg.DeploymentStrategy, e.Cfg.RollingUpdate),
			// Above the startup probe's budget, so a model that is still
			// downloading is not reported as a failed rollout.
			ProgressDeadlineSeconds: ptr.To(progressDeadline(tmpl.Spec.Containers[0].StartupProbe)),
			Template:                tmpl,
		},
	}
	if e.Autoscaled {
		// The autoscaler owns them, once handed over (transition/handover.go).
		d.Spec.Replicas = nil
	}
	return d
}

// EngineService builds the ClusterIP Service of one model's engines.
func engineService(s *resolve.Stack, e resolve.Engine) *corev1.Service {
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: withAnnotations(s.Meta(s.Names.EngineService(e.ID), EngineLabels(s.Name, e)), e.Cfg.Service.Annotations),
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: engineSelector(s.Name, e),
			Ports: append([]corev1.ServicePort{{
				Name: names.ServicePortName, Port: names.ServicePort, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(names.EnginePort),
			}}, transferServicePorts(e)...),
		},
	}
}

// chatTemplateConfigMap holds the model's chat template, mounted at
// /templates.
func chatTemplateConfigMap(s *resolve.Stack, e resolve.Engine) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: s.Meta(s.Names.ChatTemplates(e.ID), EngineLabels(s.Name, e)),
		Data:       map[string]string{ChatTemplateKey: e.Model.ChatTemplate},
	}
}
