package transition

import (
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// A composition resource name (key) holds one kind of one API group for
// the life of a stack. Crossplane keeps the name an object was created with
// for as long as its key stays, and garbage-collects by key only: an object
// of another kind under an observed key would be applied with the old
// object's name, and the old object, never deleted, would keep running
// (issue 38: a ScaledObject left scaling a model beside its new
// HorizontalPodAutoscaler). So a new kind gets a new key, and the change is
// made in two steps, the old object first:
//
//   - kindKept: the function never composes an object under a key whose
//     observed object is of another kind or group (a key some change of the
//     stack made hold two kinds, such as a model renamed onto another's key):
//     it is withheld while Crossplane deletes the old object, and composed
//     once that is gone;
//   - a model has at most one autoscaler: its new one (engine-M-hpa or
//     engine-M-scaledobject) is withheld while another is observed, since
//     two would fight over the Deployment's replicas and KEDA's webhook
//     refuses a ScaledObject for a Deployment another HorizontalPodAutoscaler
//     scales. Meanwhile the Deployment keeps its replicas (handover.go).
//
// TestKeysNeverChangeKind renders every stack the tests know, at every
// release, and fails if a key is ever seen with two kinds or groups.

// withhold drops from objs what must wait for an observed object to go, and
// returns their keys.
func withhold(s *resolve.Stack, o build.Observed, objs []build.Object) (kept []build.Object, withheld []string) {
	waits := map[string]bool{}
	for _, e := range s.Engines {
		if !e.Autoscaled {
			continue
		}
		want := build.EngineAutoscalerKey(e)
		for _, k := range autoscalerKeys(e.ID) {
			if k != want && o.Has(k) {
				waits[want] = true
			}
		}
	}
	kept = make([]build.Object, 0, len(objs))
	for _, ob := range objs {
		if waits[ob.Key] || !kindKept(o, ob) {
			withheld = append(withheld, ob.Key)
			continue
		}
		kept = append(kept, ob)
	}
	return kept, withheld
}

// autoscalerKeys are every key a model's autoscaler was ever composed under.
func autoscalerKeys(model string) []string {
	return []string{names.EngineHPAKey(model), names.EngineScaledObjectKey(model), names.RetiredEngineAutoscalerKey(model)}
}

// kindKept reports whether ob is of the kind and API group of the object
// observed under its key (true when none is observed, or not readable).
func kindKept(o build.Observed, ob build.Object) bool {
	m := o.Object(ob.Key)
	if m == nil {
		return true
	}
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if apiVersion == "" || kind == "" {
		// Not what a cluster sends: nothing to compare, and withholding
		// would have Crossplane delete the object.
		return true
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	want := ob.Obj.GetObjectKind().GroupVersionKind()
	return err == nil && gv.Group == want.Group && kind == want.Kind
}
