package stack

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
)

// The inference extension's HTTPRoutes: one per model, so that no route
// grows with the stack (Gateway API's CRD takes at most 16 rules a route,
// and the XRD 64 models) and no model's path moves to another object when
// models come and go. A model's route always sends /<model> to its pool,
// which the gateway strips (the picker does not tell models apart: a pool
// is one model's engines, and the route chooses the pool).
//
// The gateway's root path (/v1 for clients) belongs to one model at most,
// the root holder, and stays with it for the life of the stack: the first
// model when the stack starts routing through the extension, then whichever
// model the observed routes say holds it. Adding or removing another model
// never moves it; removing the holder leaves it to no model (a warning
// says so) rather than handing its clients to another model's answers.

// annotationRootHolder, on every model's HTTPRoute, names the model that
// holds the gateway's root path ("" when none does): where the next
// reconcile reads it, even after the holder's own route is gone.
const annotationRootHolder = "serving.vllm.ai/root-path-model"

// routeAPIVersion and routeKind are the HTTPRoute's.
const (
	routeAPIVersion = "gateway.networking.k8s.io/v1"
	routeKind       = "HTTPRoute"
)

// modelRouteKey is the composition resource name of a model's HTTPRoute.
func modelRouteKey(model string) string { return "engine-" + model + "-httproute" }

// modelRoute is a model's HTTPRoute: /<model> to its pool, and / too when
// the model holds the gateway's root path.
func modelRoute(s *resolvedStack, e engine, rootHolder string) runtime.Object {
	x := s.extension.spec
	r := inferencepool.Route{
		Name: s.names.modelRoute(e.id), Namespace: s.namespace,
		Labels:         pool(s, e).Labels,
		Annotations:    map[string]string{annotationRootHolder: rootHolder},
		Hostnames:      x.Hostnames,
		RequestTimeout: or(x.RequestTimeout, routeTimeout(s)),
	}
	r.Parents = gatewayRefs(x.ParentRefs)
	pool := s.names.inferencePool(e.id)
	r.Rules = append(r.Rules, inferencepool.Rule{Pool: pool, PathPrefix: modelPath(e)})
	if e.model.Name == rootHolder {
		r.Rules = append(r.Rules, inferencepool.Rule{Pool: pool})
	}
	return inferencepool.HTTPRoute(r)
}

// modelPath is where a model is served through the gateway: /<model>, its
// DNS label.
func modelPath(e engine) string { return "/" + e.id }

// resolveRootHolder decides which model holds the gateway's root path, from
// what Crossplane observed, and explains a holder that was removed: the
// annotation of the first model's route that is observed; else the rule
// for / of the HTTPRoute of earlier releases (inference-httproute, one
// route for every model); else, when no route of the stack is observed,
// the first model.
func resolveRootHolder(s *resolvedStack, o Observed) (holder, note string) {
	models := poolModels(s)
	inSpec := func(name string) bool {
		for _, e := range models {
			if e.model.Name == name {
				return true
			}
		}
		return false
	}
	// The user's choice; validateModelPaths refuses a name no model has.
	if root := s.extension.spec.RootModel; root != "" && inSpec(root) {
		return root, ""
	}
	for _, e := range models {
		obj := o.Object(modelRouteKey(e.id))
		if obj == nil {
			continue
		}
		meta, _ := obj["metadata"].(map[string]any)
		ann, _ := meta["annotations"].(map[string]any)
		held, _ := ann[annotationRootHolder].(string)
		if held == "" || inSpec(held) {
			return held, ""
		}
		return "", fmt.Sprintf("spec.models: %s held the gateway's root path (/v1) and is removed: /v1 now answers no model, and is handed to none, so that its clients get no other model's answers; the other models stay at /<model>/v1; set spec.inferenceExtension.rootModel to give /v1 to one of them", held)
	}
	if legacy := o.Object(inferenceRouteKey); legacy != nil {
		pool := rootPool(legacy)
		for _, e := range models {
			if pool != "" && s.names.inferencePool(e.id) == pool {
				return e.model.Name, ""
			}
		}
		return "", ""
	}
	if len(models) == 0 {
		return "", ""
	}
	return models[0].model.Name, ""
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
func legacyRoute(s *resolvedStack, o Observed, desired map[string]bool) []Object {
	for _, e := range poolModels(s) {
		if !o.Has(modelRouteKey(e.id)) {
			if obj, ok := keptObject(o, keyed{inferenceRouteKey, routeAPIVersion, routeKind}, desired); ok {
				return []Object{{inferenceRouteKey, obj}}
			}
			return nil
		}
	}
	return nil
}

// validateModelPaths refuses a model whose path (/<model>) would take the
// requests clients of the gateway's root send to /v1/...: the longest
// prefix wins across a Gateway's routes, and the model's route strips it.
func validateModelPaths(f *Findings, s *resolvedStack) {
	var names []string
	for _, e := range poolModels(s) {
		if modelPath(e) == "/v1" {
			f.errorf("%s.name %q: behind the inference extension a model is served at /<model>/v1, and /v1 is where the gateway's root serves the OpenAI API: the route of this model would take every /v1/... request; rename the model", e.path, e.model.Name)
		}
		if q := fmt.Sprintf("%q", e.model.Name); !slices.Contains(names, q) {
			names = append(names, q)
		}
	}
	if root := s.extension.spec.RootModel; root != "" && !slices.Contains(names, fmt.Sprintf("%q", root)) {
		f.errorf("spec.inferenceExtension.rootModel %s is not a model of the stack: name one of %s, or remove rootModel", clipQuote(root), strings.Join(names, ", "))
	}
}

// maxGatewayDuration is the longest duration Gateway API's pattern takes in
// one unit, ^([0-9]{1,5}(h|m|s|ms)){1,4}$: 99999h, about 11 years.
const maxGatewayDuration = 99999

// routeTimeout is the HTTPRoute's default request timeout: the longest
// start-up budget of the stack's engines, at least 10 minutes; for a model
// that scales to zero, a minute more than the time its picker holds a
// request for a cold start, so the picker's answer (the engine's, or 503 at
// the TTL) comes before the gateway's timeout.
func routeTimeout(s *resolvedStack) string {
	longest := int64(600)
	for _, e := range s.engines {
		if p := startupProbe(e); p != nil {
			longest = max(longest, int64(p.PeriodSeconds)*int64(p.FailureThreshold)+int64(p.InitialDelaySeconds))
		}
		if ttl := pickerRequestTTL(e); ttl > 0 {
			longest = max(longest, ttl+routeMarginSeconds)
		}
	}
	return gatewayDuration(longest)
}

// gatewayDuration writes seconds as a Gateway API duration, rounded up to
// the minute, or to the hour beyond 99999 minutes, and at most 99999h.
func gatewayDuration(seconds int64) string {
	minutes := (seconds + 59) / 60
	if minutes <= maxGatewayDuration {
		return fmt.Sprintf("%dm", minutes)
	}
	return fmt.Sprintf("%dh", min((minutes+59)/60, maxGatewayDuration))
}

// routeMarginSeconds is what the HTTPRoute's timeout leaves, beyond a
// picker's request TTL, for the engine's answer.
const routeMarginSeconds = 60
