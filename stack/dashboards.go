package stack

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/observability"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// The stack's dashboard and alerts (monitoring.dashboard,
// monitoring.alerts): stack/observability builds them from what the stack
// runs, at the releases it runs. Both need the ServiceMonitors, whose
// scrape gives the series the namespace and service labels the queries
// select by (validateMonitoring).

// ComponentMonitoring is the component label of the dashboard's ConfigMap
// and the PrometheusRule.
const ComponentMonitoring = "monitoring"

func dashboardOn(s *resolvedStack) bool {
	m := s.spec.Monitoring
	return m != nil && on(m.Dashboard != nil, m.Dashboard.GetEnabled())
}

func alertsOn(s *resolvedStack) bool {
	m := s.spec.Monitoring
	return m != nil && on(m.Alerts != nil, m.Alerts.GetEnabled())
}

// observabilityTarget is what the stack runs, as stack/observability takes
// it: every engine's Service and vLLM release, the router's or each
// model's picker's, and the models that always run an engine.
func observabilityTarget(s *resolvedStack) observability.Target {
	t := observability.Target{Namespace: s.namespace, Name: s.name}
	for _, e := range s.engines {
		svc := s.names.engineService(e.id)
		t.Engines = append(t.Engines, observability.Source{Service: svc, Model: e.served,
			Release: observability.Release{Program: observability.VLLM, Version: e.vllm.version}})
		if !mayBeAtZero(e) {
			t.NoEngineAlert = append(t.NoEngineAlert, svc)
		}
	}
	if extensionOn(s) {
		r := s.extension.release
		for _, e := range poolModels(s) {
			t.Pickers = append(t.Pickers, observability.Source{Service: s.names.picker(e.id), Model: e.served,
				Release: observability.Release{Program: r.Kind, Version: r.Version}})
		}
	} else {
		t.Router = &observability.Source{Service: s.names.routerService(),
			Release: observability.Release{Program: observability.Router, Version: s.router.version.version}}
	}
	return t
}

// mayBeAtZero reports whether a model may run no engine on purpose:
// replicas 0, scale to zero, or a KEDA autoscaler idle at 0 replicas.
// VLLMModelNoReadyEngine would fire for it.
func mayBeAtZero(e engine) bool {
	if scaleToZero(e) != nil {
		return true
	}
	if a := e.cfg.Autoscaling; autoscaled(e) && a != nil {
		// An HPA keeps minReplicas, at least 1; KEDA goes to idleReplicas.
		return or(a.Type, autoscalerKEDA) == autoscalerKEDA && a.IdleReplicas != nil && *a.IdleReplicas == 0
	}
	return e.cfg.Replicas != nil && *e.cfg.Replicas == 0
}

// dashboardConfigMap is the stack's Grafana dashboard.
func dashboardConfigMap(s *resolvedStack) *corev1.ConfigMap {
	d := s.spec.Monitoring.Dashboard
	l := labels(s.name, ComponentMonitoring, ComponentMonitoring)
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
		Name: s.names.dashboard(), Namespace: s.namespace, Labels: l, Annotations: ann,
	})
}

// alertThresholds are monitoring.alerts' settings with their defaults.
func alertThresholds(a *v1alpha1.Alerts) observability.Thresholds {
	th := observability.DefaultThresholds
	th.For = or(a.For, th.For)
	th.WaitingRequests = ptr.Deref(a.WaitingRequests, th.WaitingRequests)
	th.KVCacheUsagePercent = ptr.Deref(a.KVCacheUsagePercent, th.KVCacheUsagePercent)
	return th
}

// prometheusRule is the stack's alerts.
func prometheusRule(s *resolvedStack) *unstructured.Unstructured {
	a := s.spec.Monitoring.Alerts
	l := labels(s.name, ComponentMonitoring, ComponentMonitoring)
	for k, v := range a.Labels {
		if _, own := l[k]; !own {
			l[k] = v
		}
	}
	return crd(s, observability.RuleAPIVersion, observability.RuleKind, s.names.prometheusRule(), l,
		observability.RuleSpec(observabilityTarget(s), alertThresholds(a)))
}

// pickerServiceMonitor scrapes the endpoint pickers' metrics port (served
// without authentication, --metrics-endpoint-auth=false): with the
// inference extension they take the router's place.
func pickerServiceMonitor(s *resolvedStack, m *v1alpha1.ServiceMonitor) *unstructured.Unstructured {
	return serviceMonitor(s, s.names.pickerServiceMonitor(), ComponentPicker, inferencepool.MetricsPortName, m)
}
