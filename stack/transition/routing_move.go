package transition

import (
	"fmt"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// Switching a stack between the two routing layers (the router and the
// inference extension) is a change of topology too: the layer's objects
// have other keys, and Crossplane would delete the serving one at once.
// Make before break, as for a model's workload (moves.go): the old
// layer's objects are kept as observed until every object of the new one
// is ready: on the extension, every model's InferencePool accepted by a
// Gateway and its picker available; on the router, the router's Deployment
// available with its Service. Clients call the old entry point (the
// router's Service, or the Gateway) until then.

// routerLayerKeys are the router's objects.
var routerLayerKeys = []keyed{
	{names.RouterKey, "apps/v1", "Deployment"},
	{names.RouterServiceKey, "v1", "Service"},
	{names.RouterServiceAccountKey, "v1", "ServiceAccount"},
	{names.RouterRoleKey, "rbac.authorization.k8s.io/v1", "Role"},
	{names.RouterRoleBindingKey, "rbac.authorization.k8s.io/v1", "RoleBinding"},
}

// extensionLayerKeys are the extension's objects of the stack's models.
func extensionLayerKeys(s *resolve.Stack) []keyed {
	keys := []keyed{{names.InferenceRouteKey, build.RouteAPIVersion, build.RouteKind}}
	for _, e := range resolve.PoolModels(s) {
		p := names.PickerKey(e.ID)
		keys = append(keys,
			keyed{names.ModelRouteKey(e.ID), build.RouteAPIVersion, build.RouteKind},
			keyed{names.EngineKey(e.ID) + "-inferencepool", inferencepool.PoolAPIVersion, inferencepool.PoolKind},
			keyed{p, "apps/v1", "Deployment"},
			keyed{p + "-service", "v1", "Service"},
			keyed{p + "-serviceaccount", "v1", "ServiceAccount"},
			keyed{p + "-config", "v1", "ConfigMap"},
			keyed{p + "-role", "rbac.authorization.k8s.io/v1", "Role"},
			keyed{p + "-rolebinding", "rbac.authorization.k8s.io/v1", "RoleBinding"})
	}
	return keys
}

// extensionObserved: an HTTPRoute of the extension's layer is observed.
func extensionObserved(s *resolve.Stack, o build.Observed) bool {
	if o.Has(names.InferenceRouteKey) {
		return true
	}
	for _, e := range resolve.PoolModels(s) {
		if o.Has(names.ModelRouteKey(e.ID)) {
			return true
		}
	}
	return false
}

// routingMove keeps the old routing layer's observed objects while the new
// one is not ready, and says so; nothing when the stack does not switch.
func routingMove(s *resolve.Stack, o build.Observed, desired map[string]bool) ([]build.Object, string) {
	var old []keyed
	var note string
	if resolve.ExtensionOn(s) {
		if !o.Has(names.RouterKey) || desired[names.RouterKey] {
			return nil, ""
		}
		for _, e := range resolve.PoolModels(s) {
			if !o.Ready(names.EngineKey(e.ID)+"-inferencepool") || !o.Ready(names.PickerKey(e.ID)) {
				old = routerLayerKeys
				break
			}
		}
		note = fmt.Sprintf("moving to the inference extension: the router (Deployment %s) keeps serving at its Service until every model's InferencePool is accepted by its Gateway and its endpoint picker is available", s.Names.RouterDeployment())
	} else {
		if !extensionObserved(s, o) {
			return nil, ""
		}
		if !o.Ready(names.RouterKey) || !o.Has(names.RouterServiceKey) {
			old = extensionLayerKeys(s)
		}
		note = "moving to the router: the inference extension's pools keep serving through the Gateway until the router is available"
	}
	var keep []build.Object
	for _, k := range old {
		if obj, ok := keptObject(o, k, desired); ok {
			keep = append(keep, build.Object{Key: k.key, Obj: obj})
		}
	}
	if len(keep) == 0 {
		return nil, ""
	}
	return keep, note
}
