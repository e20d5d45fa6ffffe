package observability

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// mixed is a stack whose two models run vLLM releases on either side of
// the renames, behind router 0.1.9 (which has requests per model but not
// yet errors or the latency histogram).
func mixed() Target {
	return Target{
		Namespace: "team", Name: "chat",
		Engines: []Source{
			{Service: "chat-old-engine-service", Release: Release{VLLM, upstream.V(0, 10, 0)}, Model: "old"},
			{Service: "chat-new-engine-service", Release: Release{VLLM, upstream.V(0, 27, 1)}, Model: "new"},
		},
		Router:        &Source{Service: "chat-router-service", Release: Release{Router, upstream.V(0, 1, 9)}},
		NoEngineAlert: []string{"chat-old-engine-service", "chat-new-engine-service"},
	}
}

type jsonDashboard struct {
	Title, UID string
	Panels     []struct {
		ID          int
		Type, Title string
		GridPos     gridPos
		Targets     []struct{ RefID, Expr, LegendFormat string }
		FieldConfig *struct{ Defaults struct{ Unit string } }
	}
}

// TestDashboardJSON: the dashboard is JSON Grafana reads, the same bytes
// at every call, with a row per component and a query per metric name:
// a renamed metric is queried under each name, from the engines whose
// release exports it.
func TestDashboardJSON(t *testing.T) {
	b := DashboardJSON(mixed())
	if !bytes.Equal(b, DashboardJSON(mixed())) {
		t.Fatal("two calls make two dashboards")
	}
	if !json.Valid(b) {
		t.Fatalf("not JSON: %s", b)
	}
	var d jsonDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	if d.Title != "vLLM stack team/chat" || d.UID != DashboardUID("team", "chat") || len(d.UID) > 40 {
		t.Errorf("title %q, uid %q (%d characters)", d.Title, d.UID, len(d.UID))
	}
	var titles []string
	ids := map[int]bool{}
	for _, p := range d.Panels {
		titles = append(titles, p.Type+":"+p.Title)
		if ids[p.ID] {
			t.Errorf("panel id %d twice", p.ID)
		}
		ids[p.ID] = true
	}
	want := []string{
		"row:" + RowEngines, "timeseries:Requests running", "timeseries:Requests waiting", "timeseries:KV-cache usage",
		"timeseries:Time to first token", "timeseries:Inter-token latency", "timeseries:Prompt tokens per second",
		"timeseries:Generation tokens per second", "timeseries:Finished requests per second", "timeseries:Preemptions per second", "timeseries:Prefix-cache hit rate",
		"row:" + RowRouter, "timeseries:Requests per model", "timeseries:Requests per engine", "timeseries:Router latency", "timeseries:Engines discovered",
	}
	if diff := cmp.Diff(want, titles); diff != "" {
		t.Errorf("panels (-want +got):\n%s", diff)
	}
	kv := d.Panels[slices.Index(titles, "timeseries:KV-cache usage")]
	if kv.FieldConfig == nil || kv.FieldConfig.Defaults.Unit != "percentunit" {
		t.Errorf("KV-cache usage has field config %+v", kv.FieldConfig)
	}
	var kvExprs []string
	for _, q := range kv.Targets {
		kvExprs = append(kvExprs, q.RefID+" "+q.Expr+" "+q.LegendFormat)
	}
	wantKV := []string{
		`A max by (model_name) (vllm:gpu_cache_usage_perc{namespace="team",service="chat-old-engine-service"}) {{model_name}}`,
		`B max by (model_name) (vllm:kv_cache_usage_perc{namespace="team",service="chat-new-engine-service"}) {{model_name}}`,
	}
	if diff := cmp.Diff(wantKV, kvExprs); diff != "" {
		t.Errorf("KV-cache usage queries (-want +got):\n%s", diff)
	}
	lat := d.Panels[slices.Index(titles, "timeseries:Router latency")]
	if len(lat.Targets) != 1 || lat.Targets[0].Expr != `max by (server) (vllm:avg_latency{namespace="team",service="chat-router-service"})` {
		t.Errorf("router 0.1.9's latency panel queries %+v", lat.Targets)
	}
	// Two panels side by side, then the next line; a row takes one line.
	if p := d.Panels[1].GridPos; p != (gridPos{H: 8, W: 12, X: 0, Y: 1}) {
		t.Errorf("first panel at %+v", p)
	}
	if p := d.Panels[2].GridPos; p != (gridPos{H: 8, W: 12, X: 12, Y: 1}) {
		t.Errorf("second panel at %+v", p)
	}
	if p := d.Panels[11].GridPos; p != (gridPos{H: 1, W: 24, X: 0, Y: 41}) {
		t.Errorf("router row at %+v", p)
	}
}

// TestDashboardPickers: a stack on the inference extension has no router
// row but the pickers', under the names its picker release exports.
func TestDashboardPickers(t *testing.T) {
	tg := mixed()
	tg.Router = nil
	tg.Pickers = []Source{
		{Service: "chat-old-epp", Release: Release{LLMD, upstream.V(0, 8, 0)}, Model: "old"},
		{Service: "chat-new-epp", Release: Release{LLMD, upstream.V(0, 10, 0)}, Model: "new"},
	}
	var got []string
	for _, p := range DashboardPanels(tg) {
		if p.Row == RowRouter {
			t.Errorf("panel %s without a router", p.Title)
		}
		if p.Title == "Ready endpoints" {
			for _, q := range p.Queries {
				got = append(got, q.Expr)
			}
		}
	}
	want := []string{
		`sum by (name) (inference_pool_ready_pods{namespace="team",service="chat-old-epp"})`,
		`sum by (name) (llm_d_epp_ready_endpoints{namespace="team",service="chat-new-epp"})`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ready endpoints (-want +got):\n%s", diff)
	}
}

// TestDashboardConfigMap: the ConfigMap holds the dashboard under a key
// unique to the stack's namespace and name, with the labels and
// annotations given.
func TestDashboardConfigMap(t *testing.T) {
	cm := DashboardConfigMap(mixed(), ConfigMapMeta{Name: "chat-dashboard", Namespace: "team", Labels: map[string]string{"grafana_dashboard": "1"}, Annotations: map[string]string{"grafana_folder": "LLM"}})
	if cm.Name != "chat-dashboard" || cm.Namespace != "team" || cm.Labels["grafana_dashboard"] != "1" || cm.Annotations["grafana_folder"] != "LLM" || cm.Kind != "ConfigMap" {
		t.Errorf("ConfigMap %+v", cm.ObjectMeta)
	}
	if got := cm.Data["vllm-stack-team-chat.json"]; got != string(DashboardJSON(mixed())) {
		t.Errorf("data %v", cm.Data)
	}
}

// TestRules: the alerts of a stack, with the thresholds and the names its
// releases export; no "no ready engine" rule for a model that may be at
// zero, none on the router before 0.1.12.
func TestRules(t *testing.T) {
	tg := mixed()
	tg.NoEngineAlert = []string{"chat-new-engine-service"}
	var got []string
	for _, r := range Rules(tg, Thresholds{WaitingRequests: 7, KVCacheUsagePercent: 85, For: "2m"}) {
		got = append(got, r.Alert+" "+r.Labels["severity"]+" "+r.Labels["model"]+": "+r.Expr)
	}
	want := []string{
		`VLLMModelNoReadyEngine critical new: absent(vllm:num_requests_running{namespace="team",service="chat-new-engine-service"})`,
		`VLLMRequestsWaitingGrowing warning : max by (namespace, service, model_name) (vllm:num_requests_waiting{namespace="team",service=~"chat-old-engine-service|chat-new-engine-service"}) > 7 and on (namespace, service, model_name) deriv(sum by (namespace, service, model_name) (vllm:num_requests_waiting{namespace="team",service=~"chat-old-engine-service|chat-new-engine-service"})[10m:1m]) > 0`,
		`VLLMKVCacheNearlyFull warning : max by (namespace, service, model_name) (vllm:gpu_cache_usage_perc{namespace="team",service="chat-old-engine-service"}) > 0.85`,
		`VLLMKVCacheNearlyFull warning : max by (namespace, service, model_name) (vllm:kv_cache_usage_perc{namespace="team",service="chat-new-engine-service"}) > 0.85`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
	tg.Router.Release.Version = upstream.V(0, 1, 12)
	rules := Rules(tg, DefaultThresholds)
	last := rules[len(rules)-1]
	if w := `sum by (namespace, service) (vllm:healthy_pods_total{namespace="team",service="chat-router-service"}) == 0 or absent(vllm:healthy_pods_total{namespace="team",service="chat-router-service"})`; last.Alert != "VLLMRouterNoEngines" || last.Expr != w {
		t.Errorf("router 0.1.12's last rule %s: %s, want VLLMRouterNoEngines: %s", last.Alert, last.Expr, w)
	}
	spec := RuleSpec(tg, DefaultThresholds)
	g := spec["groups"].([]any)[0].(map[string]any)
	r0 := g["rules"].([]any)[0].(map[string]any)
	if g["name"] != "vllm-stack.team.chat" || r0["for"] != "5m" || r0["alert"] != "VLLMModelNoReadyEngine" {
		t.Errorf("group %v, first rule %v", g["name"], r0)
	}
}

// TestDashboardKVPanels: the prefix-cache hit rate from vLLM 0.11.0 on every
// engine; the KV connector's hit rate (0.11.1) and the offload tiers'
// transfers (0.16.0) only on the engines that run a connector or the tiers,
// each ratio over the same Services (metrics.tsv).
func TestDashboardKVPanels(t *testing.T) {
	tg := Target{Namespace: "ns", Name: "s", Engines: []Source{
		{Service: "s-plain-engine-service", Release: Release{VLLM, upstream.V(0, 27, 1)}, Model: "plain"},
		{Service: "s-off-engine-service", Release: Release{VLLM, upstream.V(0, 27, 1)}, Model: "off", Features: []string{FeatureKVConnector, FeatureKVOffload}},
		{Service: "s-lmc-engine-service", Release: Release{VLLM, upstream.V(0, 12, 0)}, Model: "lmc", Features: []string{FeatureKVConnector}},
		{Service: "s-old-engine-service", Release: Release{VLLM, upstream.V(0, 10, 1)}, Model: "old", Features: []string{FeatureKVConnector}},
	}}
	got := map[string][]string{}
	for _, p := range DashboardPanels(tg) {
		for _, q := range p.Queries {
			got[p.Title] = append(got[p.Title], q.Expr)
		}
	}
	want := map[string][]string{
		"Prefix-cache hit rate": {`sum by (model_name) (rate(vllm:prefix_cache_hits_total{namespace="ns",service=~"s-plain-engine-service|s-off-engine-service|s-lmc-engine-service"}[5m])) / sum by (model_name) (rate(vllm:prefix_cache_queries_total{namespace="ns",service=~"s-plain-engine-service|s-off-engine-service|s-lmc-engine-service"}[5m]))`},
		"KV connector hit rate": {`sum by (model_name) (rate(vllm:external_prefix_cache_hits_total{namespace="ns",service=~"s-off-engine-service|s-lmc-engine-service"}[5m])) / sum by (model_name) (rate(vllm:external_prefix_cache_queries_total{namespace="ns",service=~"s-off-engine-service|s-lmc-engine-service"}[5m]))`},
		"KV offload transfers":  {`sum by (model_name, transfer_type) (rate(vllm:kv_offload_total_bytes_total{namespace="ns",service="s-off-engine-service"}[5m]))`},
	}
	for title, w := range want {
		if diff := cmp.Diff(w, got[title]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", title, diff)
		}
	}
	plain := Target{Namespace: "ns", Name: "s", Engines: tg.Engines[:1]}
	for _, p := range DashboardPanels(plain) {
		if p.Title == "KV connector hit rate" || p.Title == "KV offload transfers" {
			t.Errorf("an engine without a connector has the panel %s", p.Title)
		}
	}
}
