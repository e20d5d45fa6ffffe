package stack

import (
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Autoscaling defaults.
const (
	autoscalerKEDA         = "keda"
	autoscalerHPA          = "hpa"
	defaultQueueThreshold  = "5"
	defaultPollingInterval = int32(15)
	defaultCooldownPeriod  = int32(360)
	defaultCPUTarget       = int32(80)
)

// autoscaled reports whether an autoscaler owns a model's replicas. The
// Deployment's spec.replicas is then not sent: with server-side apply the
// stack would otherwise reset every scaling decision.
func autoscaled(e engine) bool {
	a := e.cfg.Autoscaling
	return a != nil && (a.Enabled == nil || *a.Enabled) || scaleToZero(e) != nil
}

func routerAutoscaled(s *resolvedStack) bool {
	a := s.router.autoscaling
	return a != nil && (a.Enabled == nil || *a.Enabled)
}

// engineAutoscaler builds the model's KEDA ScaledObject or
// HorizontalPodAutoscaler.
func engineAutoscaler(s *resolvedStack, e engine) Object {
	if scaleToZero(e) != nil {
		return Object{engineScaledObjectKey(e.id), scaleToZeroObject(s, e)}
	}
	a := e.cfg.Autoscaling
	if engineHPATarget(e) {
		return Object{engineHPAKey(e.id), hpa(s, s.names.engineHPA(e.id), engineLabels(s.name, e), s.names.engineDeployment(e.id),
			a.MinReplicas, *a.MaxReplicas, a.TargetCPUUtilizationPercentage)}
	}
	return Object{engineScaledObjectKey(e.id), scaledObject(s, e)}
}

// engineHPATarget: the model's autoscaler is a HorizontalPodAutoscaler
// (else a KEDA ScaledObject).
func engineHPATarget(e engine) bool {
	a := e.cfg.Autoscaling
	return scaleToZero(e) == nil && a != nil && or(a.Type, autoscalerKEDA) == autoscalerHPA
}

// engineAutoscalerKey is the key of the autoscaler the model has now.
func engineAutoscalerKey(e engine) string {
	if engineHPATarget(e) {
		return engineHPAKey(e.id)
	}
	return engineScaledObjectKey(e.id)
}

// engineMinReplicas is the fewest replicas the model's autoscaler keeps.
func engineMinReplicas(e engine) int32 {
	if scaleToZero(e) != nil {
		return 0
	}
	return ptr.Deref(e.cfg.Autoscaling.MinReplicas, 1)
}

// scaledObject scales a model's engines on vLLM's queue of waiting requests,
// the signal that a model needs more replicas (GPU utilisation is always
// high under load and says nothing about latency). KEDA is a CRD, so the
// object is built unstructured.
func scaledObject(s *resolvedStack, e engine) *unstructured.Unstructured {
	a := e.cfg.Autoscaling
	query := a.Query
	if query == "" {
		query = fmt.Sprintf(`sum(vllm:num_requests_waiting{model_name=%q,namespace=%q})`, e.served, s.namespace)
	}
	spec := map[string]any{
		"scaleTargetRef":  map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": s.names.engineDeployment(e.id)},
		"minReplicaCount": int64(ptr.Deref(a.MinReplicas, 1)),
		"maxReplicaCount": int64(*a.MaxReplicas),
		"pollingInterval": int64(ptr.Deref(a.PollingInterval, defaultPollingInterval)),
		"cooldownPeriod":  int64(ptr.Deref(a.CooldownPeriod, defaultCooldownPeriod)),
		"triggers": []any{map[string]any{
			"type": "prometheus",
			"metadata": map[string]any{
				"serverAddress": a.PrometheusAddress,
				"query":         query,
				"threshold":     or(a.Threshold, defaultQueueThreshold),
			},
		}},
	}
	if a.IdleReplicas != nil {
		spec["idleReplicaCount"] = int64(*a.IdleReplicas)
	}
	if f := a.Fallback; f != nil {
		spec["fallback"] = map[string]any{"failureThreshold": int64(f.FailureThreshold), "replicas": int64(f.Replicas)}
	}
	return crd(s, "keda.sh/v1alpha1", "ScaledObject", s.names.engineScaledObject(e.id), engineLabels(s.name, e), spec)
}

// hpa scales a Deployment on average CPU utilisation.
func hpa(s *resolvedStack, name string, labels map[string]string, target string, minReplicas *int32, maxReplicas int32, cpu *int32) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: s.meta(name, labels),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: target},
			MinReplicas:    ptr.To(ptr.Deref(minReplicas, 1)),
			MaxReplicas:    maxReplicas,
			Metrics: []autoscalingv2.MetricSpec{{
				Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{
					Name:   corev1.ResourceCPU,
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(ptr.Deref(cpu, defaultCPUTarget))},
				},
			}},
		},
	}
}

func routerHPA(s *resolvedStack) *autoscalingv2.HorizontalPodAutoscaler {
	a := s.router.autoscaling
	return hpa(s, s.names.routerHPA(), routerLabels(s), s.names.routerDeployment(), a.MinReplicas, *a.MaxReplicas, a.TargetCPUUtilizationPercentage)
}

// validateAutoscaling checks an autoscaling block as written at path.
func validateAutoscaling(f *Findings, path string, a *v1alpha1.Autoscaling) {
	if a == nil {
		return
	}
	if a.Enabled != nil && !*a.Enabled {
		// The XRD's rule holds for a disabled autoscaler too.
		orderedBounds(f, path, a.MinReplicas, a.MaxReplicas)
		return
	}
	validateScaleBounds(f, path, a.MinReplicas, a.MaxReplicas)
	if a.IdleReplicas != nil && *a.IdleReplicas >= ptr.Deref(a.MinReplicas, 1) {
		f.errorf("%s.idleReplicas %d must be below minReplicas %d: KEDA scales to idleReplicas only when there is no traffic", path, *a.IdleReplicas, ptr.Deref(a.MinReplicas, 1))
	}
	if or(a.Type, autoscalerKEDA) == autoscalerKEDA {
		if a.PrometheusAddress == "" {
			f.errorf("%s.prometheusAddress is required with type keda: KEDA reads vllm:num_requests_waiting from the Prometheus that scrapes the engines", path)
		}
		validateKEDAThreshold(f, path+".threshold", a.Threshold)
		validatePrometheusAddress(f, path+".prometheusAddress", a.PrometheusAddress)
	}
}

func validateRouterAutoscaling(f *Findings, path string, a *v1alpha1.RouterAutoscaling) {
	if a == nil {
		return
	}
	if a.Enabled != nil && !*a.Enabled {
		orderedBounds(f, path, a.MinReplicas, a.MaxReplicas)
		return
	}
	validateScaleBounds(f, path, a.MinReplicas, a.MaxReplicas)
}

func validateScaleBounds(f *Findings, path string, minReplicas, maxReplicas *int32) {
	atLeast(f, path+".minReplicas", minReplicas, 1)
	switch {
	case maxReplicas == nil:
		f.errorf("%s.maxReplicas is required: set the most replicas the autoscaler may run", path)
	case *maxReplicas < ptr.Deref(minReplicas, 1):
		f.errorf("%s: minReplicas %d exceeds maxReplicas %d", path, ptr.Deref(minReplicas, 1), *maxReplicas)
	}
}

// orderedBounds is the XRD's rule on minReplicas and maxReplicas when both
// are set, which holds whether or not the autoscaler is enabled.
func orderedBounds(f *Findings, path string, minReplicas, maxReplicas *int32) {
	if minReplicas != nil && maxReplicas != nil && *minReplicas > *maxReplicas {
		f.errorf("%s: minReplicas %d exceeds maxReplicas %d", path, *minReplicas, *maxReplicas)
	}
}
