package transition

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// The replicas hand-over (issue 38). An autoscaled Deployment's spec.replicas
// belongs to its autoscaler, so the function does not send it. But
// Crossplane applies composed objects with server-side apply: a field the
// function stops sending that no other field manager owns is removed, and
// the Deployment's default (1) takes its place. Dropping replicas: 3 in the
// response that turns autoscaling on would scale the model to one replica
// before its autoscaler exists. So the field is handed over:
//
//   - while the Deployment's spec.replicas is the function's (Crossplane's
//     composed-resource field manager owns it, as observed in managedFields)
//     the function keeps sending the observed count, until the autoscaler
//     is observed ready and either another field manager owns the field too
//     (the autoscaler wrote the scale subresource: dropping leaves its value)
//     or the count is 1 (the default: dropping changes nothing). An
//     autoscaler that never rescales (its count already right) never writes
//     the field, and dropping it then would reset it to 1: the function
//     keeps it, at the count the autoscaler itself holds;
//   - once another manager alone owns it, the function never sends it;
//   - a HorizontalPodAutoscaler does not scale a Deployment at zero (one a
//     ScaledObject scaled to zero, or replicas: 0): the function sends
//     minReplicas until the HPA takes over.
//
// Autoscaling turned off sends the manifest's replicas again, in the same
// response that lets Crossplane delete the autoscaler (it deletes before it
// applies), so the two never fight.

// composedFieldManager is the prefix of the field manager Crossplane applies
// composed objects with (apiextensions.crossplane.io/composed/<XR hash>,
// FieldOwnerComposedPrefix in internal/controller/apiextensions/composite/
// composition_functions.go@v2.4.0).
const composedFieldManager = "apiextensions.crossplane.io/composed/"

// handOver sets the replicas of the autoscaled Deployments among objs, which
// their builders leave out, to what the hand-over sends (AutoscaledReplicas).
func handOver(s *resolve.Stack, o build.Observed, objs []build.Object) {
	replicas := map[string]func() *int32{}
	for _, e := range s.Engines {
		if e.Autoscaled {
			replicas[names.EngineKey(e.ID)] = func() *int32 {
				return AutoscaledReplicas(o, names.EngineKey(e.ID), build.EngineAutoscalerKey(e), build.EngineHPATarget(e), build.EngineMinReplicas(e))
			}
		}
	}
	if resolve.RouterAutoscaled(s) {
		replicas[names.RouterKey] = func() *int32 {
			return AutoscaledReplicas(o, names.RouterKey, names.RouterAutoscalerKey, true, ptr.Deref(s.Router.Autoscaling.MinReplicas, 1))
		}
	}
	for _, ob := range objs {
		if d, ok := ob.Obj.(*appsv1.Deployment); ok && replicas[ob.Key] != nil {
			d.Spec.Replicas = replicas[ob.Key]()
		}
	}
}

// AutoscaledReplicas is what an autoscaled Deployment (key workload) sends
// as spec.replicas while its autoscaler (key autoscaler) takes the field
// over; nil once it has, or for a Deployment not yet observed (the
// autoscaler starts it from the default).
func AutoscaledReplicas(o build.Observed, workload, autoscaler string, hpa bool, minReplicas int32) *int32 {
	if o == nil {
		return nil
	}
	d := o.Object(workload)
	r, ok := observedReplicas(d)
	if !ok {
		return nil
	}
	if hpa && r == 0 {
		return ptr.To(max(minReplicas, 1))
	}
	ours, others := replicasOwners(d)
	if !ours || o.Has(autoscaler) && o.Ready(autoscaler) && (others || r == 1) {
		return nil
	}
	return ptr.To(r)
}

// observedReplicas is the observed Deployment's spec.replicas.
func observedReplicas(d map[string]any) (int32, bool) {
	spec, _ := d["spec"].(map[string]any)
	switch v := spec["replicas"].(type) {
	case float64:
		if v >= 0 && v <= float64(1<<31-1) && v == float64(int32(v)) {
			return int32(v), true
		}
	case int64:
		if v >= 0 && v <= 1<<31-1 {
			return int32(v), true
		}
	case int32:
		return v, v >= 0
	}
	return 0, false
}

// replicasOwners says whether Crossplane's composed-resource field manager
// (ours) and any other field manager own the observed Deployment's
// spec.replicas, from its managedFields.
func replicasOwners(d map[string]any) (ours, others bool) {
	meta, _ := d["metadata"].(map[string]any)
	entries, _ := meta["managedFields"].([]any)
	for _, e := range entries {
		m, _ := e.(map[string]any)
		fields, _ := m["fieldsV1"].(map[string]any)
		spec, _ := fields["f:spec"].(map[string]any)
		if _, ok := spec["f:replicas"]; !ok {
			continue
		}
		manager, _ := m["manager"].(string)
		sub, _ := m["subresource"].(string)
		if strings.HasPrefix(manager, composedFieldManager) && sub == "" {
			ours = true
		} else {
			others = true
		}
	}
	return ours, others
}
