package xp

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The kinds a Gateway stand-in reads and writes: the HTTPRoute of Gateway
// API v1.6.3 and the InferencePool of the Gateway API Inference Extension
// v1.5.0 (their CRDs, pinned in e2e/crds/go.mod, installed by InstallCRD).
var (
	HTTPRouteGVR     = schema.GroupVersionResource{Group: "gateway.networking.k8s.io", Version: "v1", Resource: "httproutes"}
	InferencePoolGVR = schema.GroupVersionResource{Group: "inference.networking.k8s.io", Version: "v1", Resource: "inferencepools"}
)

// GatewayControllerName is the status.parents[].controllerName a Gateway
// stand-in writes (a GatewayClass's controllerName: DOMAIN/PATH).
const GatewayControllerName = "e2e.vllm.ai/gateway"

// A GatewayMode is how a Gateway stand-in answers for a namespace's pools.
type GatewayMode int

const (
	// GatewayIgnores writes nothing: no Gateway has taken up the routes
	// (status.parents stays empty, or loses this controller's entries).
	GatewayIgnores GatewayMode = iota
	// GatewayAccepts accepts every pool a route references, resolving
	// its endpointPickerRef to the Service of that name in the pool's
	// namespace (ResolvedRefs False, InvalidExtensionRef, without it).
	GatewayAccepts
	// GatewayUnresolved accepts the pools but cannot resolve their
	// endpoint picker (ResolvedRefs False, InvalidExtensionRef), whatever
	// exists.
	GatewayUnresolved
)

// A Gateway stands in for a Gateway implementation that supports the
// inference extension, as far as the function can see one: nothing routes
// here, but for every InferencePool that an HTTPRoute with parentRefs
// references as a backend (group inference.networking.k8s.io, kind
// InferencePool, in the route's namespace unless it names another), it
// writes status.parents through the pool's status subresource as a
// conformant implementation does: per parentRef of those routes (a Gateway
// by default) an entry with its controllerName and the conditions Accepted
// and ResolvedRefs, with reason, message, observedGeneration and
// lastTransitionTime (kept while a condition's status stays). A pool no
// route references gets none of its entries, so a route that names a pool
// the stack did not compose leaves that pool unaccepted. It serves only the
// namespaces it is told to (Serve), every 500 ms until Stop.
type Gateway struct {
	*standIn[GatewayMode]
	k    *Kube
	logf func(string, ...any)
}

// StartGateway starts the stand-in; it serves no namespace yet.
func StartGateway(ctx context.Context, k *Kube, logf func(string, ...any)) *Gateway {
	g := &Gateway{k: k, logf: orNop(logf)}
	g.standIn = startStandIn(ctx, "gateway", g.logf, g.sync)
	return g
}

// gatewayParent is a route's parentRef with its defaults applied: the
// parentRef of a pool's status entry.
type gatewayParent struct{ group, kind, namespace, name string }

func (p gatewayParent) ref() map[string]any {
	return map[string]any{"group": p.group, "kind": p.kind, "namespace": p.namespace, "name": p.name}
}

// sync writes the status of every pool of namespace ns.
func (g *Gateway) sync(ctx context.Context, ns string, mode GatewayMode) error {
	// The parents of each pool, from every route in the namespace. (A
	// route of another namespace may name a pool here only with a
	// ReferenceGrant, which no stack composes.)
	routes, err := g.k.Dynamic.Resource(HTTPRouteGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("cannot list HTTPRoutes: %w", err)
	}
	parents := map[string][]gatewayParent{}
	for _, r := range routes.Items {
		if r.GetDeletionTimestamp() != nil {
			continue
		}
		var ps []gatewayParent
		refs, _, _ := unstructured.NestedSlice(r.Object, "spec", "parentRefs")
		for _, pr := range refs {
			m, _ := pr.(map[string]any)
			p := gatewayParent{group: "gateway.networking.k8s.io", kind: "Gateway", namespace: ns}
			if s, ok := m["group"].(string); ok {
				p.group = s
			}
			if s, ok := m["kind"].(string); ok && s != "" {
				p.kind = s
			}
			if s, _ := m["namespace"].(string); s != "" {
				p.namespace = s
			}
			p.name, _ = m["name"].(string)
			if p.group == "gateway.networking.k8s.io" && p.kind == "Gateway" && p.name != "" && !slices.Contains(ps, p) {
				ps = append(ps, p)
			}
		}
		if len(ps) == 0 {
			continue
		}
		rules, _, _ := unstructured.NestedSlice(r.Object, "spec", "rules")
		for _, rule := range rules {
			rm, _ := rule.(map[string]any)
			backends, _, _ := unstructured.NestedSlice(rm, "backendRefs")
			for _, b := range backends {
				bm, _ := b.(map[string]any)
				if bm["group"] != InferencePoolGVR.Group || bm["kind"] != "InferencePool" {
					continue
				}
				if bns, _ := bm["namespace"].(string); bns != "" && bns != ns {
					continue
				}
				name, _ := bm["name"].(string)
				for _, p := range ps {
					if !slices.Contains(parents[name], p) {
						parents[name] = append(parents[name], p)
					}
				}
			}
		}
	}

	pools := g.k.Dynamic.Resource(InferencePoolGVR).Namespace(ns)
	l, err := pools.List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("cannot list InferencePools: %w", err)
	}
	var errs []string
	for i := range l.Items {
		pool := &l.Items[i]
		if pool.GetDeletionTimestamp() != nil {
			continue
		}
		want := g.poolParents(ctx, pool, parents[pool.GetName()], mode)
		have, _, _ := unstructured.NestedSlice(pool.Object, "status", "parents")
		if reflect.DeepEqual(normalize(have), normalize(want)) {
			continue
		}
		if len(want) == 0 {
			unstructured.RemoveNestedField(pool.Object, "status", "parents")
		} else if err := unstructured.SetNestedSlice(pool.Object, want, "status", "parents"); err != nil {
			return err
		}
		// A conflict (Crossplane updated the pool since the list) is
		// retried next round.
		if _, err := pools.UpdateStatus(ctx, pool, metav1.UpdateOptions{FieldManager: "e2e-gateway"}); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Sprintf("cannot write the status of InferencePool %s: %v", pool.GetName(), err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

// poolParents is the pool's status.parents as the stand-in wants them: the
// entries of other controllers as they are, then one of its own per parent
// (none in GatewayIgnores), each keeping a condition's lastTransitionTime
// while its status stays.
func (g *Gateway) poolParents(ctx context.Context, pool *unstructured.Unstructured, parents []gatewayParent, mode GatewayMode) []any {
	have, _, _ := unstructured.NestedSlice(pool.Object, "status", "parents")
	var out []any
	mine := map[gatewayParent][]any{}
	for _, h := range have {
		m, _ := h.(map[string]any)
		if m["controllerName"] != GatewayControllerName {
			out = append(out, h)
			continue
		}
		ref, _ := m["parentRef"].(map[string]any)
		p := gatewayParent{}
		p.group, _ = ref["group"].(string)
		p.kind, _ = ref["kind"].(string)
		p.namespace, _ = ref["namespace"].(string)
		p.name, _ = ref["name"].(string)
		mine[p], _ = m["conditions"].([]any)
	}
	if mode == GatewayIgnores || len(parents) == 0 {
		return out
	}
	resolved, why := true, ""
	epp, _, _ := unstructured.NestedString(pool.Object, "spec", "endpointPickerRef", "name")
	switch {
	case mode == GatewayUnresolved:
		resolved, why = false, fmt.Sprintf("the endpoint picker %s cannot be resolved (e2e: the Gateway stand-in is told so)", epp)
	case epp == "":
		resolved, why = false, "spec.endpointPickerRef names no Service"
	default:
		_, err := g.k.Core.Services(pool.GetNamespace()).Get(ctx, epp, metav1.GetOptions{})
		if err != nil {
			resolved, why = false, fmt.Sprintf("Service %s of spec.endpointPickerRef: %v", epp, err)
		}
	}
	now := metav1.Now().UTC().Format(time.RFC3339)
	for _, p := range parents {
		prev := mine[p]
		conds := []any{
			poolCondition(prev, "Accepted", true, "Accepted", "the Gateway accepts InferencePool backends", pool.GetGeneration(), now),
		}
		if resolved {
			conds = append(conds, poolCondition(prev, "ResolvedRefs", true, "ResolvedRefs", "every reference of the InferencePool is resolved", pool.GetGeneration(), now))
		} else {
			conds = append(conds, poolCondition(prev, "ResolvedRefs", false, "InvalidExtensionRef", why, pool.GetGeneration(), now))
		}
		out = append(out, map[string]any{"parentRef": p.ref(), "controllerName": GatewayControllerName, "conditions": conds})
	}
	return out
}

// poolCondition is a metav1.Condition of a pool's parent entry, keeping
// the lastTransitionTime of the previous condition of its type while its
// status stays.
func poolCondition(prev []any, typ string, ok bool, reason, message string, generation int64, now string) map[string]any {
	status := "False"
	if ok {
		status = "True"
	}
	at := now
	for _, c := range prev {
		if m, _ := c.(map[string]any); m["type"] == typ && m["status"] == status {
			if t, _ := m["lastTransitionTime"].(string); t != "" {
				at = t
			}
		}
	}
	return map[string]any{
		"type": typ, "status": status, "reason": reason, "message": message,
		"observedGeneration": generation, "lastTransitionTime": at,
	}
}

// normalize makes an empty list and none the same (the built entries hold
// strings, int64 and nested maps and lists, as decoded ones do).
func normalize(v []any) []any {
	if len(v) == 0 {
		return nil
	}
	return v
}
