package build

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// hpaBehavior is autoscaling.behavior as a HorizontalPodAutoscaler's
// behavior; nil when unset (Kubernetes' defaults).
func hpaBehavior(b *v1alpha1.ScalingBehavior) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	if b == nil {
		return nil
	}
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: hpaRules(b.ScaleUp), ScaleDown: hpaRules(b.ScaleDown)}
}

func hpaRules(r *v1alpha1.ScalingRules) *autoscalingv2.HPAScalingRules {
	if r == nil {
		return nil
	}
	out := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: r.StabilizationWindowSeconds}
	if r.SelectPolicy != "" {
		p := autoscalingv2.ScalingPolicySelect(r.SelectPolicy)
		out.SelectPolicy = &p
	}
	for _, p := range r.Policies {
		out.Policies = append(out.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.HPAScalingPolicyType(p.Type), Value: p.Value, PeriodSeconds: p.PeriodSeconds})
	}
	return out
}

// kedaBehavior is autoscaling.behavior as KEDA's ScaledObject takes it
// (advanced.horizontalPodAutoscalerConfig.behavior, the same type; KEDA
// v2.20.2 apis/keda/v1alpha1/scaledobject_types.go:164-167), unstructured.
func kedaBehavior(b *v1alpha1.ScalingBehavior) map[string]any {
	out := map[string]any{}
	for dir, r := range map[string]*v1alpha1.ScalingRules{"scaleUp": b.ScaleUp, "scaleDown": b.ScaleDown} {
		if r == nil {
			continue
		}
		m := map[string]any{}
		if r.StabilizationWindowSeconds != nil {
			m["stabilizationWindowSeconds"] = int64(*r.StabilizationWindowSeconds)
		}
		if r.SelectPolicy != "" {
			m["selectPolicy"] = r.SelectPolicy
		}
		if len(r.Policies) > 0 {
			var ps []any
			for _, p := range r.Policies {
				ps = append(ps, map[string]any{"type": p.Type, "value": int64(p.Value), "periodSeconds": int64(p.PeriodSeconds)})
			}
			m["policies"] = ps
		}
		out[dir] = m
	}
	return out
}
