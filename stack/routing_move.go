package stack

import (
	"fmt"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
)

// Switching a stack between the two routing layers (the router and the
// inference extension) is a change of topology too: the layer's objects
// have other keys, and Crossplane would delete the serving one at once.
// Make before break, as for a model's workload (transition.go): the old
// layer's objects are kept as observed until every object of the new one
// is ready: on the extension, every model's InferencePool accepted by a
// Gateway and its picker available; on the router, the router's Deployment
// available with its Service. Clients call the old entry point (the
// router's Service, or the Gateway) until then.

// routerLayerKeys are the router's objects.
var routerLayerKeys = []keyed{
	{routerKey, "apps/v1", "Deployment"},
	{routerServiceKey, "v1", "Service"},
	{routerServiceAccountKey, "v1", "ServiceAccount"},
	{routerRoleKey, "rbac.authorization.k8s.io/v1", "Role"},
	{routerRoleBindingKey, "rbac.authorization.k8s.io/v1", "RoleBinding"},
}

// extensionLayerKeys are the extension's objects of the stack's models.
func extensionLayerKeys(s *resolvedStack) []keyed {
	keys := []keyed{{inferenceRouteKey, routeAPIVersion, routeKind}}
	for _, e := range poolModels(s) {
		p := pickerKey(e.id)
		keys = append(keys,
			keyed{modelRouteKey(e.id), routeAPIVersion, routeKind},
			keyed{engineKey(e.id) + "-inferencepool", inferencepool.PoolAPIVersion, inferencepool.PoolKind},
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
func extensionObserved(s *resolvedStack, o Observed) bool {
	if o.Has(inferenceRouteKey) {
		return true
	}
	for _, e := range poolModels(s) {
		if o.Has(modelRouteKey(e.id)) {
			return true
		}
	}
	return false
}

// routingMove keeps the old routing layer's observed objects while the new
// one is not ready, and says so; nothing when the stack does not switch.
func routingMove(s *resolvedStack, o Observed, desired map[string]bool) ([]Object, string) {
	var old []keyed
	var note string
	if extensionOn(s) {
		if !o.Has(routerKey) || desired[routerKey] {
			return nil, ""
		}
		for _, e := range poolModels(s) {
			if !o.Ready(engineKey(e.id)+"-inferencepool") || !o.Ready(pickerKey(e.id)) {
				old = routerLayerKeys
				break
			}
		}
		note = fmt.Sprintf("moving to the inference extension: the router (Deployment %s) keeps serving at its Service until every model's InferencePool is accepted by its Gateway and its endpoint picker is available", s.names.routerDeployment())
	} else {
		if !extensionObserved(s, o) {
			return nil, ""
		}
		if !o.Ready(routerKey) || !o.Has(routerServiceKey) {
			old = extensionLayerKeys(s)
		}
		note = "moving to the router: the inference extension's pools keep serving through the Gateway until the router is available"
	}
	var keep []Object
	for _, k := range old {
		if obj, ok := keptObject(o, k, desired); ok {
			keep = append(keep, Object{k.key, obj})
		}
	}
	if len(keep) == 0 {
		return nil, ""
	}
	return keep, note
}
