package build

import (
	"fmt"
	"math"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Autoscaling defaults.
const (
	defaultQueueThreshold  = "5"
	defaultPollingInterval = int32(15)
	defaultCooldownPeriod  = int32(360)
	defaultCPUTarget       = int32(80)
)

// engineAutoscaler builds the model's KEDA ScaledObject or
// HorizontalPodAutoscaler.
func engineAutoscaler(s *resolve.Stack, e resolve.Engine) Object {
	if e.ScaleToZero != nil {
		return Object{names.EngineScaledObjectKey(e.ID), scaleToZeroObject(s, e)}
	}
	a := e.Cfg.Autoscaling
	if EngineHPATarget(e) {
		h := hpa(s, s.Names.EngineHPA(e.ID), EngineLabels(s.Name, e), s.Names.EngineDeployment(e.ID),
			a.MinReplicas, *a.MaxReplicas, a.TargetCPUUtilizationPercentage)
		h.Spec.Behavior = hpaBehavior(a.Behavior)
		return Object{names.EngineHPAKey(e.ID), h}
	}
	return Object{names.EngineScaledObjectKey(e.ID), scaledObject(s, e)}
}

// EngineHPATarget: the model's autoscaler is a HorizontalPodAutoscaler
// (else a KEDA ScaledObject).
func EngineHPATarget(e resolve.Engine) bool {
	a := e.Cfg.Autoscaling
	return e.ScaleToZero == nil && a != nil && resolve.AutoscalerType(a) == resolve.AutoscalerHPA
}

// EngineAutoscalerKey is the key of the autoscaler the model has now.
func EngineAutoscalerKey(e resolve.Engine) string {
	if EngineHPATarget(e) {
		return names.EngineHPAKey(e.ID)
	}
	return names.EngineScaledObjectKey(e.ID)
}

// EngineMinReplicas is the fewest replicas the model's autoscaler keeps.
func EngineMinReplicas(e resolve.Engine) int32 {
	if e.ScaleToZero != nil {
		return 0
	}
	return ptr.Deref(e.Cfg.Autoscaling.MinReplicas, 1)
}

// scaledObject scales a model's engines on vLLM's queue of waiting requests,
// the signal that a model needs more replicas (GPU utilisation is always
// high under load and says nothing about latency). KEDA is a CRD, so the
// object is built unstructured.
func scaledObject(s *resolve.Stack, e resolve.Engine) *unstructured.Unstructured {
	a := e.Cfg.Autoscaling
	spec := map[string]any{
		"scaleTargetRef":  map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": s.Names.EngineDeployment(e.ID)},
		"minReplicaCount": int64(ptr.Deref(a.MinReplicas, 1)),
		"maxReplicaCount": int64(*a.MaxReplicas),
		"pollingInterval": int64(ptr.Deref(a.PollingInterval, defaultPollingInterval)),
		"cooldownPeriod":  int64(ptr.Deref(a.CooldownPeriod, defaultCooldownPeriod)),
		"triggers":        kedaTriggers(a.PrometheusAddress, engineTriggers(s, e)),
	}
	if a.IdleReplicas != nil {
		spec["idleReplicaCount"] = int64(*a.IdleReplicas)
	}
	if f := a.Fallback; f != nil {
		fb := map[string]any{"failureThreshold": int64(f.FailureThreshold), "replicas": int64(f.Replicas)}
		if f.Behavior != "" {
			fb["behavior"] = f.Behavior
		}
		spec["fallback"] = fb
	}
	if a.InitialCooldownPeriod != nil {
		spec["initialCooldownPeriod"] = int64(*a.InitialCooldownPeriod)
	}
	if a.Behavior != nil {
		spec["advanced"] = map[string]any{"horizontalPodAutoscalerConfig": map[string]any{"behavior": kedaBehavior(a.Behavior)}}
	}
	return crd(s, "keda.sh/v1alpha1", "ScaledObject", s.Names.EngineScaledObject(e.ID), EngineLabels(s.Name, e), spec)
}

// hpa scales a Deployment on average CPU utilisation.
func hpa(s *resolve.Stack, name string, labels map[string]string, target string, minReplicas *int32, maxReplicas int32, cpu *int32) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
		ObjectMeta: s.Meta(name, labels),
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

func routerHPA(s *resolve.Stack) *autoscalingv2.HorizontalPodAutoscaler {
	a := s.Router.Autoscaling
	return hpa(s, s.Names.RouterHPA(), routerLabels(s), s.Names.RouterDeployment(), a.MinReplicas, *a.MaxReplicas, a.TargetCPUUtilizationPercentage)
}

// podDisruptionBudget keeps enough pods of one component serving while
// nodes are drained. Without bounds it allows one pod down at a time.
func podDisruptionBudget(s *resolve.Stack, name string, labels, sel map[string]string, p *v1alpha1.PodDisruptionBudget) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: s.Meta(name, labels),
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: sel},
			MinAvailable:   p.MinAvailable,
			MaxUnavailable: p.MaxUnavailable,
		},
	}
	if p.MinAvailable == nil && p.MaxUnavailable == nil {
		pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(1))
	}
	return pdb
}

func enginePDB(s *resolve.Stack, e resolve.Engine) *policyv1.PodDisruptionBudget {
	return podDisruptionBudget(s, s.Names.EnginePDB(e.ID), EngineLabels(s.Name, e), engineSelector(s.Name, e), e.Cfg.PodDisruptionBudget)
}

func routerPDB(s *resolve.Stack) *policyv1.PodDisruptionBudget {
	return podDisruptionBudget(s, s.Names.RouterPDB(), routerLabels(s), names.Selector(s.Name, names.ComponentRouter, names.ComponentRouter), s.Router.PDB)
}

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
)

// scaleToZeroObject is the model's ScaledObject.
func scaleToZeroObject(s *resolve.Stack, e resolve.Engine) *unstructured.Unstructured {
	z := e.ScaleToZero
	waiting := signalTrigger(s, e, SignalEngineWaiting)
	spec := map[string]any{
		"scaleTargetRef":  map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": s.Names.EngineDeployment(e.ID)},
		"minReplicaCount": int64(0),
		"maxReplicaCount": int64(*z.MaxReplicas),
		"pollingInterval": int64(ptr.Deref(z.PollingInterval, defaultPollingInterval)),
		"cooldownPeriod":  int64(ptr.Deref(z.IdleSeconds, defaultIdleSeconds)),
		// A new model's first replica is never active without a request, and
		// KEDA scales in a ScaledObject never active once its
		// initialCooldownPeriod (default 0) has passed since its creation
		// (pkg/scaling/executor/scale_scaledobjects.go:210-213@v2.20.2): it
		// would stop the first engine at its first check (e2e-keda measured
		// 1.4 s), mid-download. It gets the cold start to come up and fill
		// the cache, then the idle time, as any replica.
		// The CRD's field is an int32: the sum of two int32 is capped there.
		"initialCooldownPeriod": min(ColdStartSeconds(e)+int64(ptr.Deref(z.IdleSeconds, defaultIdleSeconds)), math.MaxInt32),
		"triggers": kedaTriggers(z.PrometheusAddress, []kedaTrigger{
			{name: "wake", query: wakeQuery(s, e), threshold: "1"},
			{name: "waiting", query: waiting.query, threshold: resolve.Or(z.Threshold, waiting.threshold)},
		}),
	}
	return crd(s, "keda.sh/v1alpha1", "ScaledObject", s.Names.EngineScaledObject(e.ID), EngineLabels(s.Name, e), spec)
}

// wakeQuery is 1 while the model is in use or asked for, else 0: with the
// inference extension, requests its picker holds for the pool (the queue
// gauge, summed over its series: one per fairness ID, priority and model
// name) or the engines run; with the router, requests it received for the
// model in the last two minutes (counted also when no engine is ready):
// rate needs two samples in its range, which excludes its start, so one
// minute would see no request at all when Prometheus scrapes the router
// every minute (tools/promql TestTriggersEvaluated). With threshold 1 it
// asks for one replica; the waiting trigger scales out.
func wakeQuery(s *resolve.Stack, e resolve.Engine) string {
	if resolve.ExtensionOn(s) {
		return fmt.Sprintf(`(sum(%s{namespace=%q,inference_pool=%q}) or vector(0)) + (sum(vllm:num_requests_running{model_name=%q,namespace=%q}) or vector(0)) > bool 0`,
			upstream.PickerQueueMetric(s.Extension.Release), s.Namespace, s.Names.InferencePool(e.ID), e.Served, s.Namespace)
	}
	return fmt.Sprintf(`sum(rate(vllm:num_incoming_requests_total{model=%q,namespace=%q}[2m])) > bool 0`, e.Served, s.Namespace)
}
