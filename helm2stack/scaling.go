package helm2stack

import (
	"fmt"
	"maps"
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Conversions of KEDA triggers and disruption budgets.

// kedaTriggers: the chart passes keda.triggers to the ScaledObject as they
// are (helm/templates/scaledobject-vllm.yaml:57-59). One Prometheus
// trigger becomes prometheusAddress, query and threshold; several become
// autoscaling.triggers, each its query and threshold under its name (the
// chart's, else trigger-<i>), all on one Prometheus (prometheusAddress).
func (c *converter) kedaTriggers(n node) error {
	if n.empty() {
		return nil
	}
	var triggers []struct {
		Type       string            `json:"type"`
		Name       string            `json:"name"`
		MetricType string            `json:"metricType"`
		Metadata   map[string]string `json:"metadata"`
	}
	if err := n.object(&triggers); err != nil {
		return err
	}
	a := autoscalingOf(c.engine())
	prometheus := 0
	for _, t := range triggers {
		if t.Type == "prometheus" {
			prometheus++
		}
	}
	for i, t := range triggers {
		p := fmt.Sprintf("%s[%d]", n.path, i)
		if t.Type != "prometheus" {
			c.res.drop(p, "not supported: the ScaledObject's triggers are Prometheus queries (autoscaling.prometheusAddress, query and threshold, or autoscaling.triggers)")
			continue
		}
		if t.MetricType != "" && t.MetricType != "AverageValue" {
			c.res.drop(p, "not supported: a query of your own is compared with its threshold per replica (KEDA's AverageValue); metricType "+t.MetricType+" is not rendered")
			continue
		}
		if addr := t.Metadata["serverAddress"]; addr != "" && a.PrometheusAddress != "" && addr != a.PrometheusAddress {
			c.res.drop(p, "not supported: the stack's triggers read one Prometheus, "+a.PrometheusAddress+" (autoscaling.prometheusAddress), and this one reads "+addr)
			continue
		}
		var tr *v1alpha1.ScalingTrigger
		if prometheus > 1 {
			name := t.Name
			if !triggerName.MatchString(name) || len(name) > 63 {
				name = fmt.Sprintf("trigger-%d", i)
				if t.Name != "" {
					c.res.note(p+".name", fmt.Sprintf("%q is not a lowercase DNS label: the trigger is named %s", t.Name, name))
				}
			}
			a.Triggers = append(a.Triggers, v1alpha1.ScalingTrigger{Name: name})
			tr = &a.Triggers[len(a.Triggers)-1]
		}
		for k, v := range t.Metadata {
			switch k {
			case "serverAddress":
				a.PrometheusAddress = v
			case "query":
				if tr != nil {
					tr.Query = v
				} else {
					a.Query = v
				}
			case "threshold":
				if tr != nil {
					tr.Threshold = v
				} else {
					a.Threshold = v
				}
			case "metricName":
			default:
				c.res.drop(p+".metadata."+k, "not supported: the trigger has serverAddress, query and threshold only")
			}
		}
	}
	return nil
}

// triggerName is the XRD's pattern of autoscaling.triggers[].name.
var triggerName = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

// intOrString sets a PodDisruptionBudget bound: a number or a percentage.
func intOrString(budget func(c *converter) **v1alpha1.PodDisruptionBudget, minAvailable bool) func(*converter, node) error {
	return func(c *converter, n node) error {
		if n.v == nil || n.v == "" {
			return nil
		}
		var v intstr.IntOrString
		if s, ok := n.v.(string); ok {
			v = intstr.FromString(s)
		} else {
			i, err := n.int32()
			if err != nil {
				return n.wrongType("a number or a percentage")
			}
			v = intstr.FromInt32(i)
		}
		p := ensure(budget(c))
		if minAvailable {
			p.MinAvailable = &v
		} else {
			p.MaxUnavailable = &v
		}
		return nil
	}
}

// kedaAdvanced converts the chart's keda.advanced: its
// horizontalPodAutoscalerConfig.behavior is autoscaling.behavior (the same
// fields; policies and windows as KEDA passes them to its
// HorizontalPodAutoscaler); the rest has no field.
func (c *converter) kedaAdvanced(n node) error {
	if n.empty() {
		return nil
	}
	var adv map[string]any
	if err := n.object(&adv); err != nil {
		return err
	}
	for _, k := range slices.Sorted(maps.Keys(adv)) {
		p := n.path + "." + k
		if k != "horizontalPodAutoscalerConfig" {
			c.res.drop(p, "not supported: the ScaledObject has no "+k+" (autoscaling.behavior is the HPA's behaviour)")
			continue
		}
		hpa, _ := adv[k].(map[string]any)
		for _, hk := range slices.Sorted(maps.Keys(hpa)) {
			if hk != "behavior" {
				c.res.drop(p+"."+hk, "not supported: KEDA names the HorizontalPodAutoscaler keda-hpa-<ScaledObject>; autoscaling.behavior is its behaviour")
				continue
			}
			var b v1alpha1.ScalingBehavior
			if err := (node{path: p + ".behavior", v: hpa[hk]}).object(&b); err != nil {
				return err
			}
			autoscalingOf(c.engine()).Behavior = &b
		}
	}
	return nil
}
