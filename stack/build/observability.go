package build

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/observability"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// observabilityTarget is what the stack runs, as stack/observability takes
// it: every engine's Service and vLLM release, the router's or each
// model's picker's, and the models that always run an engine.
func observabilityTarget(s *resolve.Stack) observability.Target {
	t := observability.Target{Namespace: s.Namespace, Name: s.Name}
	for _, e := range s.Engines {
		svc := s.Names.EngineService(e.ID)
		t.Engines = append(t.Engines, observability.Source{Service: svc, Model: e.Served,
			Release:  observability.Release{Program: observability.VLLM, Version: e.VLLM.Version},
			Features: engineFeatures(e)})
		if !mayBeAtZero(e) {
			t.NoEngineAlert = append(t.NoEngineAlert, svc)
		}
	}
	if resolve.ExtensionOn(s) {
		r := s.Extension.Release
		for _, e := range resolve.PoolModels(s) {
			t.Pickers = append(t.Pickers, observability.Source{Service: s.Names.Picker(e.ID), Model: e.Served,
				Release: observability.Release{Program: r.Kind, Version: r.Version}})
		}
	} else {
		t.Router = &observability.Source{Service: s.Names.RouterService(),
			Release: observability.Release{Program: observability.Router, Version: s.Router.Version.Version}}
	}
	return t
}

// mayBeAtZero reports whether a model may run no engine on purpose:
// replicas 0, scale to zero, or a KEDA autoscaler idle at 0 replicas.
// VLLMModelNoReadyEngine would fire for it.
func mayBeAtZero(e resolve.Engine) bool {
	if e.ScaleToZero != nil {
		return true
	}
	if a := e.Cfg.Autoscaling; e.Autoscaled && a != nil {
		// An HPA keeps minReplicas, at least 1; KEDA goes to idleReplicas.
		return resolve.AutoscalerType(a) == resolve.AutoscalerKEDA && a.IdleReplicas != nil && *a.IdleReplicas == 0
	}
	return e.Cfg.Replicas != nil && *e.Cfg.Replicas == 0
}

// dashboardConfigMap is the stack's Grafana dashboard.
func dashboardConfigMap(s *resolve.Stack) *corev1.ConfigMap {
	d := s.Spec.Monitoring.Dashboard
	l := names.Labels(s.Name, names.ComponentMonitoring, names.ComponentMonitoring)
	sidecar := d.Labels
	if len(sidecar) == 0 {
		sidecar = observability.DefaultDashboardLabels
	}
	for k, v := range sidecar {
		if _, own := l[k]; !own {
			l[k] = v
		}
	}
	var ann map[string]string
	if len(d.Annotations) > 0 {
		ann = maps.Clone(d.Annotations)
	}
	return observability.DashboardConfigMap(observabilityTarget(s), observability.ConfigMapMeta{
		Name: s.Names.Dashboard(), Namespace: s.Namespace, Labels: l, Annotations: ann,
	})
}

// alertThresholds are monitoring.alerts' settings with their defaults.
func alertThresholds(a *v1alpha1.Alerts) observability.Thresholds {
	th := observability.DefaultThresholds
	th.For = resolve.Or(a.For, th.For)
	th.WaitingRequests = ptr.Deref(a.WaitingRequests, th.WaitingRequests)
	th.KVCacheUsagePercent = ptr.Deref(a.KVCacheUsagePercent, th.KVCacheUsagePercent)
	return th
}

// PrometheusRule is the stack's alerts.
func prometheusRule(s *resolve.Stack) *unstructured.Unstructured {
	a := s.Spec.Monitoring.Alerts
	l := names.Labels(s.Name, names.ComponentMonitoring, names.ComponentMonitoring)
	for k, v := range a.Labels {
		if _, own := l[k]; !own {
			l[k] = v
		}
	}
	return crd(s, observability.RuleAPIVersion, observability.RuleKind, s.Names.PrometheusRule(), l,
		observability.RuleSpec(observabilityTarget(s), alertThresholds(a)))
}

// PickerServiceMonitor scrapes the endpoint pickers' metrics port (served
// without authentication, --metrics-endpoint-auth=false): with the
// inference extension they take the router's place.
func pickerServiceMonitor(s *resolve.Stack, m *v1alpha1.ServiceMonitor) *unstructured.Unstructured {
	return serviceMonitor(s, s.Names.PickerServiceMonitor(), names.ComponentPicker, inferencepool.MetricsPortName, m)
}

// engineFeatures are what an engine runs that dashboard panels of a
// feature show: a KV connector beyond the GPU (LMCache, or vLLM's KV offload
// tiers), and the offload tiers themselves.
func engineFeatures(e resolve.Engine) []string {
	var f []string
	if e.LMCache || e.KVOffload {
		f = append(f, observability.FeatureKVConnector)
	}
	if e.KVOffload {
		f = append(f, observability.FeatureKVOffload)
	}
	return f
}
