package observability

import (
	"strconv"
)

// PrometheusRule's apiVersion and kind (the Prometheus Operator's
// monitoring.coreos.com/v1, the group and version of its ServiceMonitor).
const (
	RuleAPIVersion = "monitoring.coreos.com/v1"
	RuleKind       = "PrometheusRule"
)

// Thresholds are the alerts' settings.
type Thresholds struct {
	// WaitingRequests: VLLMRequestsWaitingGrowing fires above it.
	WaitingRequests int32
	// KVCacheUsagePercent: VLLMKVCacheNearlyFull fires above it.
	KVCacheUsagePercent int32
	// For is how long a condition holds before its alert fires, a
	// Prometheus duration.
	For string
}

// DefaultThresholds are the alerts' defaults.
var DefaultThresholds = Thresholds{WaitingRequests: 10, KVCacheUsagePercent: 90, For: "5m"}

// A Rule is one alerting rule as the PrometheusRule holds it.
type Rule struct {
	Alert   string
	Expr    string
	Labels  map[string]string
	Summary string
	Metric  string
}

// threshold is an alert's {T}.
func (th Thresholds) threshold(alert string) string {
	switch alert {
	case "VLLMRequestsWaitingGrowing", "VLLMPickerQueueGrowing":
		return strconv.Itoa(int(th.WaitingRequests))
	case "VLLMKVCacheNearlyFull":
		return strconv.FormatFloat(float64(th.KVCacheUsagePercent)/100, 'f', -1, 64)
	}
	return ""
}

// Rules are t's alerting rules, in the order of Alerts: those whose metric
// the releases t runs export, one per metric name among them, or per
// Service for a PerService alert.
func Rules(t Target, th Thresholds) []Rule {
	var out []Rule
	for _, a := range Alerts {
		src := t.sources(a.Programs)
		var sets [][]Source
		if a.PerService {
			for _, s := range src {
				for _, svc := range t.NoEngineAlert {
					if s.Service == svc {
						sets = append(sets, []Source{s})
					}
				}
			}
		} else {
			sets = [][]Source{src}
		}
		for _, set := range sets {
			for _, q := range render(t.Namespace, a.Variants, set, th.threshold(a.Name)) {
				l := map[string]string{"severity": a.Severity}
				if a.PerService {
					l["model"] = set[0].Model
				}
				out = append(out, Rule{Alert: a.Name, Expr: q.Expr, Labels: l, Summary: a.Summary, Metric: q.Metric})
			}
		}
	}
	return out
}

// RuleSpec is the spec of t's PrometheusRule: one group named after the
// stack.
func RuleSpec(t Target, th Thresholds) map[string]any {
	var rules []any
	for _, r := range Rules(t, th) {
		labels := map[string]any{}
		for k, v := range r.Labels {
			labels[k] = v
		}
		rules = append(rules, map[string]any{
			"alert":       r.Alert,
			"expr":        r.Expr,
			"for":         th.For,
			"labels":      labels,
			"annotations": map[string]any{"summary": r.Summary, "stack": t.Namespace + "/" + t.Name},
		})
	}
	if rules == nil {
		rules = []any{}
	}
	return map[string]any{"groups": []any{map[string]any{"name": "vllm-stack." + t.Namespace + "." + t.Name, "rules": rules}}}
}
