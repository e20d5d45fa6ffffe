package stack

import (
	"testing"

	"github.com/vllm-project/function-vllm-stack/stack/transition"
)

// TestAutoscaledReplicas: what an autoscaled Deployment sends as
// spec.replicas, by who owns the observed count and whether the autoscaler
// is ready (transition/handover.go).
func TestAutoscaledReplicas(t *testing.T) {
	const crossplane, scale = "apiextensions.crossplane.io/composed/1a2b", "kube-controller-manager"
	deployment := func(replicas any, managers ...string) map[string]any {
		var mf []any
		for _, m := range managers {
			e := map[string]any{"manager": m, "fieldsV1": map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}}}
			if m == scale {
				e["subresource"] = "scale"
			}
			mf = append(mf, e)
		}
		mf = append(mf, map[string]any{"manager": "other", "fieldsV1": map[string]any{"f:spec": map[string]any{"f:template": map[string]any{}}}})
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "d", "managedFields": mf},
			"spec": map[string]any{"replicas": replicas}}
	}
	for name, tc := range map[string]struct {
		deployment map[string]any
		ready, hpa bool
		want       int32 // -1: not sent
	}{
		"not observed":                           {nil, false, false, -1},
		"ours, autoscaler not ready":             {deployment(float64(3), crossplane), false, false, 3},
		"ours, ready, never written":             {deployment(float64(3), crossplane), true, false, 3},
		"ours, ready, at the default":            {deployment(float64(1), crossplane), true, false, -1},
		"shared with the scale subresource":      {deployment(float64(3), crossplane, scale), true, false, -1},
		"shared, autoscaler not ready":           {deployment(float64(3), crossplane, scale), false, false, 3},
		"the autoscaler's":                       {deployment(float64(5), scale), false, false, -1},
		"no managedFields":                       {deployment(float64(3)), true, false, -1},
		"at zero, to an HPA":                     {deployment(float64(0), scale), false, true, 2},
		"at zero, to a ScaledObject":             {deployment(float64(0), scale), false, false, -1},
		"ours at zero, to a ScaledObject, ready": {deployment(float64(0), crossplane), true, false, 0},
		"int64 count":                            {deployment(int64(3), crossplane), true, false, 3},
		"negative count":                         {deployment(float64(-3), crossplane), false, false, -1},
		"fractional count":                       {deployment(2.5, crossplane), false, false, -1},
		"count not a number":                     {deployment("3", crossplane), false, false, -1},
	} {
		t.Run(name, func(t *testing.T) {
			o := fakeObserved{objects: map[string]map[string]any{}, ready: map[string]bool{"auto": tc.ready}}
			if tc.deployment != nil {
				o.objects["engine-m"] = tc.deployment
			}
			o.objects["auto"] = map[string]any{}
			got := transition.AutoscaledReplicas(o, "engine-m", "auto", tc.hpa, 2)
			switch {
			case tc.want < 0 && got != nil:
				t.Errorf("spec.replicas %d sent, want none", *got)
			case tc.want >= 0 && (got == nil || *got != tc.want):
				t.Errorf("spec.replicas %v, want %d", got, tc.want)
			}
		})
	}
	if got := transition.AutoscaledReplicas(nil, "engine-m", "auto", true, 1); got != nil {
		t.Errorf("nothing observed: spec.replicas %d", *got)
	}
}
