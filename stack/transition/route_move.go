package transition

import (
	"fmt"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// ResolveRootHolder decides which model holds the gateway's root path, from
// what Crossplane observed, and explains a holder that was removed: the
// annotation of the first model's route that is observed; else the rule
// for / of the HTTPRoute of earlier releases (inference-httproute, one
// route for every model); else, when no route of the stack is observed,
// the first model.
func ResolveRootHolder(s *resolve.Stack, o build.Observed) (holder, note string) {
	models := resolve.PoolModels(s)
	inSpec := func(name string) bool {
		for _, e := range models {
			if e.Model.Name == name {
				return true
			}
		}
		return false
	}
	// The user's choice; validateModelPaths refuses a name no model has.
	if root := s.Extension.Spec.RootModel; root != "" && inSpec(root) {
		return root, ""
	}
	for _, e := range models {
		obj := o.Object(names.ModelRouteKey(e.ID))
		if obj == nil {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		held, _ := ann[names.AnnotationRootHolder].(string)
		if held == "" || inSpec(held) {
			return held, ""
		}
		return "", fmt.Sprintf("spec.models: %s held the gateway's root path (/v1) and is removed: /v1 now answers no model, and is handed to none, so that its clients get no other model's answers; the other models stay at /<model>/v1; set spec.inferenceExtension.rootModel to give /v1 to one of them", held)
	}
	if legacy := o.Object(names.InferenceRouteKey); legacy != nil {
		pool := rootPool(legacy)
		for _, e := range models {
			if pool != "" && s.Names.InferencePool(e.ID) == pool {
				return e.Model.Name, ""
			}
		}
		return "", ""
	}
	if len(models) == 0 {
		return "", ""
	}
	return models[0].Model.Name, ""
}

// rootPool is the pool an observed HTTPRoute sends / to, unrewritten: ""
// when none.
func rootPool(route map[string]any) string {
	spec, _ := route["spec"].(map[string]any)
	rules, _ := spec["rules"].([]any)
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		matches, _ := rule["matches"].([]any)
		backends, _ := rule["backendRefs"].([]any)
		if len(matches) != 1 || len(backends) != 1 {
			continue
		}
		m, _ := matches[0].(map[string]any)
		path, _ := m["path"].(map[string]any)
		if path["value"] != "/" {
			continue
		}
		b, _ := backends[0].(map[string]any)
		name, _ := b["name"].(string)
		return name
	}
	return ""
}

// legacyRoute keeps the single HTTPRoute of earlier releases, as observed,
// until every model's own route is observed: the two serve the same paths
// meanwhile (the Gateway gives a conflicting match to the older route), so
// no request finds no route.
func legacyRoute(s *resolve.Stack, o build.Observed, desired map[string]bool) []build.Object {
	for _, e := range resolve.PoolModels(s) {
		if e.Version == "" && !o.Has(names.ModelRouteKey(e.ID)) { // a canary has no route of its own
			if obj, ok := keptObject(o, keyed{names.InferenceRouteKey, build.RouteAPIVersion, build.RouteKind}, desired); ok {
				return []build.Object{{Key: names.InferenceRouteKey, Obj: obj}}
			}
			return nil
		}
	}
	return nil
}
