package helm2stack

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Conversions of KEDA triggers and disruption budgets.

// kedaTriggers: one Prometheus trigger becomes prometheusAddress, query
// and threshold.
func (c *converter) kedaTriggers(n node) error {
	if n.empty() {
		return nil
	}
	var triggers []struct {
		Type     string            `json:"type"`
		Metadata map[string]string `json:"metadata"`
	}
	if err := n.object(&triggers); err != nil {
		return err
	}
	for i, t := range triggers {
		p := fmt.Sprintf("%s[%d]", n.path, i)
		if t.Type != "prometheus" || i > 0 {
			c.res.drop(p, "not supported: the ScaledObject has one Prometheus trigger (autoscaling.prometheusAddress, query, threshold)")
			continue
		}
		a := autoscalingOf(c.engine())
		for k, v := range t.Metadata {
			switch k {
			case "serverAddress":
				a.PrometheusAddress = v
			case "query":
				a.Query = v
			case "threshold":
				a.Threshold = v
			case "metricName":
			default:
				c.res.drop(p+".metadata."+k, "not supported: the trigger has serverAddress, query and threshold only")
			}
		}
	}
	return nil
}

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
