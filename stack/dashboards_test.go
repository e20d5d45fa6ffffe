package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// TestDashboardAndAlerts: with monitoring.dashboard and monitoring.alerts
// on, the stack composes the dashboard's ConfigMap, labelled for Grafana's
// sidecar, and a PrometheusRule with the thresholds set; a model at zero
// replicas has no "no ready engine" rule.
func TestDashboardAndAlerts(t *testing.T) {
	xr := with("model", nil, "models", []any{
		map[string]any{"name": "a", "modelURL": "org/a"},
		map[string]any{"name": "b", "modelURL": "org/b", "replicas": 0},
	}, "vllmConfig.image", "vllm/vllm-openai:v0.10.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12",
		"monitoring", map[string]any{
			"serviceMonitor": map[string]any{},
			"dashboard":      map[string]any{"annotations": map[string]any{"grafana_folder": "LLM"}},
			"alerts":         map[string]any{"labels": map[string]any{"release": "prom"}, "kvCacheUsagePercent": 80, "waitingRequests": 4, "for": "10m"},
		})
	rsp := mustRun(t, req(t, xr, nil, nil))
	ks := keys(rsp)
	if i, j := slices.Index(ks, names.DashboardKey), slices.Index(ks, names.PrometheusRuleKey); i < 0 || j != i+1 || ks[i-1] != names.RouterMonitorKey {
		t.Errorf("keys %v: want the dashboard and the rule after the ServiceMonitors", ks)
	}
	cm := rsp.objects[names.DashboardKey].(*corev1.ConfigMap)
	wantLabels := map[string]string{
		names.LabelName: "monitoring", names.LabelInstance: "s", names.LabelComponent: "monitoring", names.LabelPartOf: names.PartOf, names.LabelManagedBy: names.ManagedBy,
		"grafana_dashboard": "1",
	}
	if diff := cmp.Diff(wantLabels, cm.Labels); diff != "" {
		t.Errorf("dashboard labels (-want +got):\n%s", diff)
	}
	if cm.Name != "s-dashboard" || cm.Namespace != "llm" || cm.Annotations["grafana_folder"] != "LLM" || len(cm.Data) != 1 || cm.Data["vllm-stack-llm-s.json"] == "" {
		t.Errorf("dashboard ConfigMap %s/%s, annotations %v, keys of data %d", cm.Namespace, cm.Name, cm.Annotations, len(cm.Data))
	}
	if js := cm.Data["vllm-stack-llm-s.json"]; !strings.Contains(js, `vllm:gpu_cache_usage_perc{namespace=\"llm\",service=~\"s-a-engine-service|s-b-engine-service\"}`) {
		t.Errorf("the dashboard of vLLM 0.10.0 does not query the KV cache of both engines by its old name")
	}

	rule := rsp.objects[names.PrometheusRuleKey].(*unstructured.Unstructured)
	if rule.GetAPIVersion() != "monitoring.coreos.com/v1" || rule.GetKind() != "PrometheusRule" || rule.GetName() != "s-alerts" || rule.GetLabels()["release"] != "prom" {
		t.Errorf("rule %s %s %s, labels %v", rule.GetAPIVersion(), rule.GetKind(), rule.GetName(), rule.GetLabels())
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	var got []string
	for _, r := range groups[0].(map[string]any)["rules"].([]any) {
		r := r.(map[string]any)
		got = append(got, r["alert"].(string)+" for "+r["for"].(string)+": "+r["expr"].(string))
	}
	sel := `{namespace="llm",service=~"s-a-engine-service|s-b-engine-service"}`
	router := `vllm:healthy_pods_total{namespace="llm",service="s-router-service"}`
	want := []string{
		`VLLMModelNoReadyEngine for 10m: absent(vllm:num_requests_running{namespace="llm",service="s-a-engine-service"})`,
		`VLLMRequestsWaitingGrowing for 10m: max by (namespace, service, model_name) (vllm:num_requests_waiting` + sel + `) > 4 and on (namespace, service, model_name) deriv(sum by (namespace, service, model_name) (vllm:num_requests_waiting` + sel + `)[10m:1m]) > 0`,
		`VLLMKVCacheNearlyFull for 10m: max by (namespace, service, model_name) (vllm:gpu_cache_usage_perc` + sel + `) > 0.8`,
		`VLLMRouterNoEngines for 10m: sum by (namespace, service) (` + router + `) == 0 or absent(` + router + `)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
}

// TestDashboardLabelsReplaceDefault: labels the stack names replace the
// sidecar's default label, beside the stack's own (a label the stack owns
// is refused: TestDashboardAlertsRefusals).
func TestDashboardLabelsReplaceDefault(t *testing.T) {
	xr := with("monitoring", map[string]any{"serviceMonitor": map[string]any{},
		"dashboard": map[string]any{"labels": map[string]any{"dashboards": "vllm"}}})
	cm := mustRun(t, req(t, xr, nil, nil)).objects[names.DashboardKey].(*corev1.ConfigMap)
	if cm.Labels["dashboards"] != "vllm" || cm.Labels[names.LabelInstance] != "s" {
		t.Errorf("labels %v", cm.Labels)
	}
	if _, ok := cm.Labels["grafana_dashboard"]; ok {
		t.Errorf("labels %v keep the default the stack replaced", cm.Labels)
	}
}

// TestPickerServiceMonitor: on the inference extension, the ServiceMonitors
// scrape the endpoint pickers' metrics port instead of a router's.
func TestPickerServiceMonitor(t *testing.T) {
	rsp := mustRun(t, req(t, gieXR("monitoring", map[string]any{"serviceMonitor": map[string]any{}}), nil, nil))
	if _, ok := rsp.objects[names.RouterMonitorKey]; ok {
		t.Error("a router ServiceMonitor without a router")
	}
	m := objectMap(t, rsp, names.PickerMonitorKey)
	spec := m["spec"].(map[string]any)
	want := map[string]any{
		"selector":  map[string]any{"matchLabels": map[string]any{names.LabelInstance: "s", names.LabelComponent: names.ComponentPicker}},
		"endpoints": []any{map[string]any{"port": "http-metrics", "path": "/metrics", "interval": "30s"}},
	}
	if diff := cmp.Diff(want, spec); diff != "" {
		t.Errorf("picker ServiceMonitor spec (-want +got):\n%s", diff)
	}
	svc := desired(t, rsp, "engine-m-epp-service", &corev1.Service{})
	if svc.Labels[names.LabelInstance] != "s" || svc.Labels[names.LabelComponent] != names.ComponentPicker || !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "http-metrics" }) {
		t.Errorf("the picker Service %v, ports %v, is not what the ServiceMonitor selects", svc.Labels, svc.Spec.Ports)
	}
}

// TestDashboardAlertsRefusals: each mistake is refused naming its field.
func TestDashboardAlertsRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		monitoring map[string]any
		want       string
	}{
		"DashboardWithoutServiceMonitor": {map[string]any{"dashboard": map[string]any{}}, "spec.monitoring.dashboard needs spec.monitoring.serviceMonitor"},
		"AlertsWithServiceMonitorOff": {map[string]any{"serviceMonitor": map[string]any{"enabled": false}, "alerts": map[string]any{}},
			"spec.monitoring.alerts needs spec.monitoring.serviceMonitor"},
		"DashboardLabel": {map[string]any{"serviceMonitor": map[string]any{}, "dashboard": map[string]any{"labels": map[string]any{"grafana_dashboard": "not ok"}}},
			`spec.monitoring.dashboard.labels[grafana_dashboard] "not ok" is not a valid label value`},
		"DashboardAnnotation": {map[string]any{"serviceMonitor": map[string]any{}, "dashboard": map[string]any{"annotations": map[string]any{"bad key": "x"}}},
			`spec.monitoring.dashboard.annotations key "bad key" is invalid`},
		"AlertsLabel": {map[string]any{"serviceMonitor": map[string]any{}, "alerts": map[string]any{"labels": map[string]any{"-x": "y"}}},
			`spec.monitoring.alerts.labels key "-x" is not a valid label key`},
		// A label the stack sets would be dropped silently, and with it
		// the dashboard's default grafana_dashboard label (issue 38 §4).
		"DashboardOwnedLabel": {map[string]any{"serviceMonitor": map[string]any{}, "dashboard": map[string]any{"labels": map[string]any{"app.kubernetes.io/part-of": "grafana"}}},
			"invalid ProductionStack: spec.monitoring.dashboard.labels[app.kubernetes.io/part-of] is a label the stack sets on its objects, and the stack's value would replace it: remove it (the stack owns app.kubernetes.io/name, app.kubernetes.io/instance, app.kubernetes.io/component, app.kubernetes.io/part-of, app.kubernetes.io/managed-by)"},
		"AlertsOwnedLabel": {map[string]any{"serviceMonitor": map[string]any{}, "alerts": map[string]any{"labels": map[string]any{"app.kubernetes.io/name": "rules", "release": "prom"}}},
			"invalid ProductionStack: spec.monitoring.alerts.labels[app.kubernetes.io/name] is a label the stack sets on its objects, and the stack's value would replace it: remove it (the stack owns app.kubernetes.io/name, app.kubernetes.io/instance, app.kubernetes.io/component, app.kubernetes.io/part-of, app.kubernetes.io/managed-by)"},
		"ServiceMonitorOwnedLabel": {map[string]any{"serviceMonitor": map[string]any{"labels": map[string]any{"app.kubernetes.io/managed-by": "helm"}}},
			"invalid ProductionStack: spec.monitoring.serviceMonitor.labels[app.kubernetes.io/managed-by] is a label the stack sets on its objects, and the stack's value would replace it: remove it (the stack owns app.kubernetes.io/name, app.kubernetes.io/instance, app.kubernetes.io/component, app.kubernetes.io/part-of, app.kubernetes.io/managed-by)"},
		"AlertsForZero": {map[string]any{"serviceMonitor": map[string]any{}, "alerts": map[string]any{"for": "0m"}},
			`spec.monitoring.alerts.for "0m" is invalid: use a Prometheus duration`},
		"KVCachePercent": {map[string]any{"serviceMonitor": map[string]any{}, "alerts": map[string]any{"kvCacheUsagePercent": 101}},
			"spec.monitoring.alerts.kvCacheUsagePercent 101 is invalid: use a percentage from 1 to 100"},
		"WaitingRequests": {map[string]any{"serviceMonitor": map[string]any{}, "alerts": map[string]any{"waitingRequests": -1}},
			"spec.monitoring.alerts.waitingRequests -1 is invalid"},
	} {
		t.Run(name, func(t *testing.T) {
			got := refusal(t, with("monitoring", tc.monitoring))
			if !strings.Contains(got, tc.want) {
				t.Errorf("refusal %q does not say %q", got, tc.want)
			}
		})
	}
	// Off, the blocks need nothing.
	if got := refusal(t, with("monitoring", map[string]any{"dashboard": map[string]any{"enabled": false}, "alerts": map[string]any{"enabled": false}})); got != "" {
		t.Errorf("refused: %s", got)
	}
}

// TestNoReadyEngineRule: a model has a VLLMModelNoReadyEngine rule unless
// it may run no engine on purpose.
func TestNoReadyEngineRule(t *testing.T) {
	observed := map[string]any{"serviceMonitor": map[string]any{}, "alerts": map[string]any{}}
	keda := func(kv ...any) map[string]any {
		a := map[string]any{"minReplicas": 1, "maxReplicas": 4, "prometheusAddress": promAddr}
		for i := 0; i < len(kv); i += 2 {
			a[kv[i].(string)] = kv[i+1]
		}
		return a
	}
	for name, tc := range map[string]struct {
		xr   map[string]any
		want int
	}{
		"Serving":        {with("monitoring", observed), 1},
		"ReplicasZero":   {with("monitoring", observed, "replicas", 0), 0},
		"KEDAIdleAtZero": {with("monitoring", observed, "autoscaling", keda("idleReplicas", 0)), 0},
		"KEDAIdleAtOne":  {with("monitoring", observed, "autoscaling", keda()), 1},
		"HPA":            {with("monitoring", observed, "autoscaling", map[string]any{"type": "hpa", "minReplicas": 1, "maxReplicas": 2}), 1},
		"ScaleToZero":    {with("monitoring", observed, "scaleToZero", zeroBlock()), 0},
	} {
		t.Run(name, func(t *testing.T) {
			rule := mustRun(t, req(t, tc.xr, nil, nil)).objects[names.PrometheusRuleKey].(*unstructured.Unstructured)
			groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
			n := 0
			for _, r := range groups[0].(map[string]any)["rules"].([]any) {
				if r.(map[string]any)["alert"] == "VLLMModelNoReadyEngine" {
					n++
				}
			}
			if n != tc.want {
				t.Errorf("%d VLLMModelNoReadyEngine rules, want %d", n, tc.want)
			}
		})
	}
}
