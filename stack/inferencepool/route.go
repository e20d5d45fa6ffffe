package inferencepool

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A ParentRef names a Gateway (and its listener) the route attaches to.
type ParentRef struct{ Name, Namespace, SectionName string }

// A Rule sends requests to one pool: all requests, or those under a path
// prefix, which the gateway strips before the engine sees the request.
type Rule struct {
	Pool       string
	PathPrefix string // "" or "/": every request, unchanged
	// Canary is a second pool of the same model, a canary version, that
	// gets CanaryWeight percent of the rule's requests (the Gateway API's
	// backendRefs[].weight; Pool gets the rest); "" for none.
	Canary       string
	CanaryWeight int32
}

// A Route is the HTTPRoute of a stack's pools.
type Route struct {
	Name, Namespace string
	Labels          map[string]string
	Annotations     map[string]string
	Parents         []ParentRef
	Hostnames       []string
	Rules           []Rule
	// RequestTimeout is timeouts.request, a Gateway API duration.
	RequestTimeout string
}

// HTTPRoute builds the route: a rule per pool whose backend is the pool
// itself (group inference.networking.k8s.io, kind InferencePool).
func HTTPRoute(r Route) *unstructured.Unstructured {
	parents := GatewayRefs(r.Parents)
	rules := make([]any, 0, len(r.Rules))
	for _, rule := range r.Rules {
		prefix := rule.PathPrefix
		if prefix == "" {
			prefix = "/"
		}
		out := map[string]any{
			"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": prefix}}},
			"backendRefs": backendRefs(rule),
		}
		if prefix != "/" {
			out["filters"] = []any{map[string]any{"type": "URLRewrite", "urlRewrite": map[string]any{
				"path": map[string]any{"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"},
			}}}
		}
		if r.RequestTimeout != "" {
			out["timeouts"] = map[string]any{"request": r.RequestTimeout}
		}
		rules = append(rules, out)
	}
	spec := map[string]any{"parentRefs": parents, "rules": rules}
	if len(r.Hostnames) > 0 {
		hosts := make([]any, len(r.Hostnames))
		for i, h := range r.Hostnames {
			hosts[i] = h
		}
		spec["hostnames"] = hosts
	}
	u := object("gateway.networking.k8s.io/v1", "HTTPRoute", r.Name, r.Namespace, r.Labels, spec)
	if len(r.Annotations) > 0 {
		u.SetAnnotations(r.Annotations)
	}
	return u
}

// GatewayRefs are an HTTPRoute's parentRefs to Gateways, as the Gateway
// API writes them (the router's HTTPRoute has them too).
func GatewayRefs(parents []ParentRef) []any {
	out := make([]any, 0, len(parents))
	for _, p := range parents {
		ref := map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": p.Name}
		if p.Namespace != "" {
			ref["namespace"] = p.Namespace
		}
		if p.SectionName != "" {
			ref["sectionName"] = p.SectionName
		}
		out = append(out, ref)
	}
	return out
}

func meta(name, namespace string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels}
}

// object is an object of a kind the function composes through its CRD.
func object(apiVersion, kind, name, namespace string, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace(namespace)
	u.SetLabels(labels)
	return u
}

// backendRefs are a rule's pools: its pool, or with a canary both, weighted
// (GAIE's inferencepool-rollout guide splits a route's traffic this way).
func backendRefs(rule Rule) []any {
	ref := func(pool string) map[string]any {
		return map[string]any{"group": poolGroup, "kind": PoolKind, "name": pool}
	}
	if rule.Canary == "" {
		return []any{ref(rule.Pool)}
	}
	stable, canary := ref(rule.Pool), ref(rule.Canary)
	stable["weight"] = int64(100 - rule.CanaryWeight)
	canary["weight"] = int64(rule.CanaryWeight)
	return []any{stable, canary}
}
