package stack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// specReplicas returns a desired Deployment's spec.replicas as sent, and
// whether it was sent at all.
func specReplicas(t *testing.T, rsp response, key string) (any, bool) {
	t.Helper()
	spec := objectMap(t, rsp, key)["spec"].(map[string]any)
	v, ok := spec["replicas"]
	return v, ok
}

func TestKEDAScaledObject(t *testing.T) {
	xr := with("autoscaling", map[string]any{
		"minReplicas": 1, "maxReplicas": 4, "idleReplicas": 0,
		"prometheusAddress": "http://prometheus-operated.monitoring:9090",
		"fallback":          map[string]any{"failureThreshold": 3, "replicas": 2},
	})
	rsp := mustRun(t, req(t, xr, nil, nil))
	if v, sent := specReplicas(t, rsp, "engine-m"); sent {
		t.Errorf("spec.replicas = %v is sent, but KEDA owns the replicas", v)
	}
	got := objectMap(t, rsp, "engine-m-scaledobject")
	want := map[string]any{
		"apiVersion": "keda.sh/v1alpha1",
		"kind":       "ScaledObject",
		"metadata": map[string]any{"name": "s-m-scaledobject", "namespace": "llm", "labels": map[string]any{
			"app.kubernetes.io/name": "m", "app.kubernetes.io/instance": "s", "app.kubernetes.io/component": "serving-engine",
			"app.kubernetes.io/part-of": "vllm-stack", "app.kubernetes.io/managed-by": "crossplane", "model": "m"}},
		"spec": map[string]any{
			"scaleTargetRef":   map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "s-m-deployment-vllm"},
			"minReplicaCount":  float64(1),
			"maxReplicaCount":  float64(4),
			"idleReplicaCount": float64(0),
			"pollingInterval":  float64(15),
			"cooldownPeriod":   float64(360),
			"fallback":         map[string]any{"failureThreshold": float64(3), "replicas": float64(2)},
			"triggers": []any{map[string]any{"type": "prometheus", "metadata": map[string]any{
				"serverAddress": "http://prometheus-operated.monitoring:9090",
				"query":         `sum(vllm:num_requests_waiting{model_name="org/m",namespace="llm"})`,
				"threshold":     "5",
			}}},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ScaledObject (-want +got):\n%s", diff)
	}
}

func TestHPA(t *testing.T) {
	rsp := mustRun(t, req(t, with("autoscaling", map[string]any{"type": "hpa", "minReplicas": 2, "maxReplicas": 6, "targetCPUUtilizationPercentage": 70},
		"routerConfig.autoscaling", map[string]any{"maxReplicas": 3}), nil, nil))
	for key, want := range map[string]autoscalingv2.HorizontalPodAutoscalerSpec{
		"engine-m-hpa": {ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "s-m-deployment-vllm"},
			MinReplicas: ptr.To(int32(2)), MaxReplicas: 6, Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(70))}}}}},
		"router-autoscaler": {ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "s-deployment-router"},
			MinReplicas: ptr.To(int32(1)), MaxReplicas: 3, Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType,
				Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(80))}}}}},
	} {
		got := desired(t, rsp, key, &autoscalingv2.HorizontalPodAutoscaler{})
		if diff := cmp.Diff(want, got.Spec); diff != "" {
			t.Errorf("%s (-want +got):\n%s", key, diff)
		}
	}
	for _, key := range []string{"engine-m", "router"} {
		if v, sent := specReplicas(t, rsp, key); sent {
			t.Errorf("%s: spec.replicas = %v is sent, but an HPA owns the replicas", key, v)
		}
	}
}

func TestAutoscalingDisabled(t *testing.T) {
	rsp := mustRun(t, req(t, with("autoscaling", map[string]any{"enabled": false, "maxReplicas": 4}, "replicas", 2,
		"storage.accessModes", []any{"ReadWriteMany"}), nil, nil))
	if _, ok := rsp.objects["engine-m-scaledobject"]; ok {
		t.Error("a disabled autoscaler must not be rendered")
	}
	if v, sent := specReplicas(t, rsp, "engine-m"); !sent || v != float64(2) {
		t.Errorf("spec.replicas = %v (sent %v), want 2", v, sent)
	}
}

func TestAutoscalingValidation(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	for name, tc := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"MaxMissing":      {xr: with("autoscaling", map[string]any{"type": "hpa"}), want: prefix + "spec.autoscaling.maxReplicas is required: set the most replicas the autoscaler may run"},
		"MinAboveMax":     {xr: with("autoscaling", map[string]any{"type": "hpa", "minReplicas": 5, "maxReplicas": 2}), want: prefix + "spec.autoscaling: minReplicas 5 exceeds maxReplicas 2"},
		"KEDAWithoutProm": {xr: with("autoscaling", map[string]any{"maxReplicas": 2}), want: prefix + "spec.autoscaling.prometheusAddress is required with type keda: KEDA reads vllm:num_requests_waiting from the Prometheus that scrapes the engines"},
		"IdleNotBelowMin": {xr: with("autoscaling", map[string]any{"maxReplicas": 2, "idleReplicas": 1, "prometheusAddress": "http://p:9090"}), want: prefix + "spec.autoscaling.idleReplicas 1 must be below minReplicas 1: KEDA scales to idleReplicas only when there is no traffic"},
		"BadThreshold":    {xr: with("autoscaling", map[string]any{"maxReplicas": 2, "threshold": "many", "prometheusAddress": "http://p:9090"}), want: prefix + `spec.autoscaling.threshold "many" is invalid: KEDA reads it as a plain number, not a Kubernetes quantity; use a positive number such as "5" or "2.5"`},
		// KEDA v2.20.2 reads the threshold with json.Unmarshal into a float64.
		"QuantityThreshold": {xr: with("autoscaling", map[string]any{"maxReplicas": 2, "threshold": "5Gi", "prometheusAddress": "http://p:9090"}), want: prefix + `spec.autoscaling.threshold "5Gi" is invalid: KEDA reads it as a plain number, not a Kubernetes quantity; use a positive number such as "5" or "2.5"`},
		"MilliThreshold":    {xr: with("autoscaling", map[string]any{"maxReplicas": 2, "threshold": "500m", "prometheusAddress": "http://p:9090"}), want: prefix + `spec.autoscaling.threshold "500m" is invalid: KEDA reads it as a plain number, not a Kubernetes quantity; use a positive number such as "5" or "2.5"`},
		"LeadingDot":        {xr: with("autoscaling", map[string]any{"maxReplicas": 2, "threshold": ".5", "prometheusAddress": "http://p:9090"}), want: prefix + `spec.autoscaling.threshold ".5" is invalid: KEDA reads it as a plain number, not a Kubernetes quantity; use a positive number such as "5" or "2.5"`},
		"ZeroThreshold":     {xr: with("autoscaling", map[string]any{"maxReplicas": 2, "threshold": "0", "prometheusAddress": "http://p:9090"}), want: prefix + `spec.autoscaling.threshold "0" is invalid: KEDA reads it as a plain number, not a Kubernetes quantity; use a positive number such as "5" or "2.5"`},
		"PromNoScheme":      {xr: with("autoscaling", map[string]any{"maxReplicas": 2, "prometheusAddress": "prometheus.monitoring:9090"}), want: prefix + `spec.autoscaling.prometheusAddress "prometheus.monitoring:9090" is not a Prometheus URL: KEDA appends /api/v1/query to it; use an http or https URL with a host and no query, such as http://prometheus-operated.monitoring:9090`},
		"PromQuery":         {xr: with("autoscaling", map[string]any{"maxReplicas": 2, "prometheusAddress": "http://p:9090/?x=1"}), want: prefix + `spec.autoscaling.prometheusAddress "http://p:9090/?x=1" is not a Prometheus URL: KEDA appends /api/v1/query to it; use an http or https URL with a host and no query, such as http://prometheus-operated.monitoring:9090`},
		"PromOtherScheme":   {xr: with("autoscaling", map[string]any{"maxReplicas": 2, "prometheusAddress": "tcp://p:9090"}), want: prefix + `spec.autoscaling.prometheusAddress "tcp://p:9090" is not a Prometheus URL: KEDA appends /api/v1/query to it; use an http or https URL with a host and no query, such as http://prometheus-operated.monitoring:9090`},
		"RouterMinAboveMax": {xr: with("routerConfig.autoscaling", map[string]any{"minReplicas": 4, "maxReplicas": 2}), want: prefix + "spec.routerConfig.autoscaling: minReplicas 4 exceeds maxReplicas 2"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := fatal(t, run(t, req(t, tc.xr, nil, nil))); got != tc.want {
				t.Errorf("Fatal message:\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}
