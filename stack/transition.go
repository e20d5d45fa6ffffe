package stack

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
)

// Observed is what Crossplane observed of a stack's composed objects, by
// composition resource name: whether one exists, whether it is ready (as the
// status judges it), and the object itself.
type Observed interface {
	Has(key string) bool
	Ready(key string) bool
	// Object is the observed object as the cluster returned it; nil when
	// it is not observed. Its maps are not changed.
	Object(key string) map[string]any
}

// Keys is an Observed that knows only which objects exist: none is ready,
// none is readable, so no change of topology is seen in progress.
type Keys func(key string) bool

func (k Keys) Has(key string) bool        { return k(key) }
func (Keys) Ready(string) bool            { return false }
func (Keys) Object(string) map[string]any { return nil }

// transitionResult is what make before break decides over the objects a
// stack builds and what Crossplane observed: the objects to compose, and
// what the status says of the change in progress.
type transitionResult struct {
	objects []Object
	// moves are the models changing topology.
	moves []Move
	// keptRouterType is the routing logic of a router kept as observed.
	keptRouterType string
	// layerMove says how the stack moves between routing layers, "" when
	// it does not (routingMove).
	layerMove string
	// withheld are the keys withheld until an observed object of another
	// kind is gone (keys.go).
	withheld []string
	// rootHolder is the model that holds the gateway's root path on the
	// extension, "" when none does (resolveRootHolder); notes are the
	// warnings of the change.
	rootHolder string
	notes      []string
}

// transit decides, over the objects built for the stack (objs) and what
// Crossplane observed, what to compose: a model whose topology changes
// keeps its old workload, a router or pool keeps the logic it runs, a layer
// of routing keeps serving until its successor is ready, and a key never
// changes kind.
func transit(s *resolvedStack, observed Observed, objs []Object) transitionResult {
	desired := make(map[string]bool, len(objs))
	for _, o := range objs {
		desired[o.Key] = true
	}
	var t transitionResult
	var keep []Object
	var freezeRouter bool
	var frozenPools []string
	t.moves, keep, freezeRouter, frozenPools, t.keptRouterType = moves(s, observed, desired)
	if freezeRouter {
		// The router keeps the logic it runs, as observed.
		objs = slices.DeleteFunc(objs, func(o Object) bool { return o.Key == routerKey })
	}
	if frozen := frozenPoolObjects(observed, frozenPools); len(frozen) > 0 {
		// A pool and its picker keep serving the old workload, as observed.
		for i, o := range objs {
			if f, ok := frozen[o.Key]; ok {
				objs[i] = f
			}
		}
	}
	var keepLayer, keepRoute []Object
	keepLayer, t.layerMove = routingMove(s, observed, desired)
	if extensionOn(s) {
		keepRoute = legacyRoute(s, observed, desired)
	}
	objs, t.withheld = withhold(s, observed, objs)
	t.objects = slices.Concat(objs, keep, keepLayer, keepRoute)
	return t
}

// A model's workload changes kind or key when its topology changes: one
// Deployment (engine-M), a LeaderWorkerSet (engine-M-leaderworkerset, with
// multiNode) or two groups' Deployments (engine-M-prefill and
// engine-M-decode, with disaggregation). Crossplane deletes whatever the
// desired state no longer holds, so rendering only the new topology would
// delete the serving workload at once. Make before break: while the old
// workload is observed and the new one is not ready, the old one is kept
// as it is observed (its spec unchanged, so nothing rolls it), with what it
// needs to keep serving (its Service, claim and chat template, where the new
// topology has other keys for them). When the two topologies need different
// routing logic (disaggregation on or off), the router is kept as observed
// too until the new workload is ready, then the router for the new topology
// is rendered, and the old workload goes once the router runs it.

// topology names a model's workload shape.
type topology int

const (
	topologyDeployment topology = iota
	topologyLeaderWorkerSet
	topologyGroups
)

// describe is how the status names a topology's workload.
func (t topology) describe() string {
	switch t {
	case topologyLeaderWorkerSet:
		return "a LeaderWorkerSet"
	case topologyGroups:
		return "prefill and decode Deployments"
	}
	return "a Deployment"
}

// A keyed is a composition resource name and the kind its object must be.
type keyed struct {
	key, apiVersion, kind string
}

// topologyKeys are the workloads and the objects serving them (Service,
// claim, chat template) of model id in a topology.
func topologyKeys(t topology, id string) (workloads, support []keyed) {
	deployment := func(id string) keyed { return keyed{engineKey(id), "apps/v1", "Deployment"} }
	serving := func(id string) []keyed {
		return []keyed{
			{engineServiceKey(id), "v1", "Service"},
			{engineStorageKey(id), "v1", "PersistentVolumeClaim"},
			{engineTemplateKey(id), "v1", "ConfigMap"},
		}
	}
	switch t {
	case topologyLeaderWorkerSet:
		return []keyed{{engineLWSKey(id), lwsv1.GroupVersion.String(), "LeaderWorkerSet"}}, serving(id)
	case topologyGroups:
		for _, role := range roleGroups {
			g := groupID(id, role)
			workloads = append(workloads, deployment(g))
			support = append(support, serving(g)...)
		}
		// A shared claim is the model's own.
		return workloads, append(support, keyed{engineStorageKey(id), "v1", "PersistentVolumeClaim"})
	}
	return []keyed{deployment(id)}, serving(id)
}

// groupID is the id of a disaggregated model's group.
func groupID(model, role string) string { return shorten(model+"-"+role, maxLabelLength) }

// topologyOf is the topology of a model's engines (one, or its two groups).
func topologyOf(e engine) topology {
	switch _, ok := multiNode(e); {
	case e.role != "":
		return topologyGroups
	case ok:
		return topologyLeaderWorkerSet
	}
	return topologyDeployment
}

// A Move is a model's change of topology in progress: its old workload is
// kept, as observed, until the new one is ready and the router runs the
// logic for it.
type Move struct {
	Model string // the model's name
	// From names the old workload, as observed: "Deployment s-m-deployment-vllm".
	From string
	// To describes the new workload: "a LeaderWorkerSet".
	To string
	// Ready: the new workload is ready; the old waits for the router.
	Ready bool
}

// moves finds each model's topology change in progress and the observed
// objects to keep for it, given the keys of the objects composed for the
// new topology. freezeRouter: the router must keep its observed logic.
func moves(s *resolvedStack, o Observed, desired map[string]bool) (ms []Move, keep []Object, freezeRouter bool, frozenPools []string, keptRouterType string) {
	routerCurrent := -1 // unknown until a move asks
	for i := 0; i < len(s.engines); {
		e := s.engines[i]
		n := 1
		if e.role != "" {
			for n < len(s.engines)-i && s.engines[i+n].modelID == e.modelID {
				n++
			}
		}
		i += n
		cur := topologyOf(e)
		newWorkloads, _ := topologyKeys(cur, e.modelID)
		var old []Object
		var oldGroups bool
		var supportKeys []keyed
		var from []string
		for _, t := range []topology{topologyDeployment, topologyLeaderWorkerSet, topologyGroups} {
			if t == cur {
				continue
			}
			workloads, support := topologyKeys(t, e.modelID)
			found := false
			for _, k := range workloads {
				obj, ok := keptObject(o, k, desired)
				if !ok {
					continue
				}
				found = true
				old = append(old, Object{k.key, obj})
				from = append(from, k.kind+" "+obj.GetName())
			}
			if found {
				oldGroups = oldGroups || t == topologyGroups
				supportKeys = append(supportKeys, support...)
			}
		}
		if len(old) == 0 {
			continue
		}
		newReady := true
		for _, k := range newWorkloads {
			newReady = newReady && o.Has(k.key) && o.Ready(k.key)
		}
		// Disaggregation on or off changes the routing: the router's logic,
		// or behind the endpoint picker its pool and configuration.
		switchLogic := oldGroups != (cur == topologyGroups)
		switchRouter := switchLogic && !extensionOn(s)
		if switchLogic && extensionOn(s) {
			if !newReady {
				// The pool and picker keep serving the old workload.
				frozenPools = append(frozenPools, e.modelID)
			} else if pickerRuns(s, o, e) {
				continue // made; the old one goes
			}
		} else if newReady && switchRouter && routerCurrent < 0 {
			routerCurrent = 0
			if routerRuns(s, o) {
				routerCurrent = 1
			}
		}
		if newReady && !switchLogic || newReady && switchRouter && routerCurrent == 1 {
			continue // make before break: made; the old one goes
		}
		freezeRouter = freezeRouter || (switchRouter && !newReady)
		keep = append(keep, old...)
		seen := map[string]bool{}
		for _, k := range supportKeys {
			if seen[k.key] {
				continue
			}
			seen[k.key] = true
			if obj, ok := keptObject(o, k, desired); ok {
				keep = append(keep, Object{k.key, obj})
			}
		}
		ms = append(ms, Move{Model: e.model.Name, From: strings.Join(from, " and "), To: cur.describe(), Ready: newReady})
	}
	if freezeRouter {
		obj, ok := keptObject(o, keyed{routerKey, "apps/v1", "Deployment"}, nil)
		if !ok {
			freezeRouter = false
		} else {
			keep = append(keep, Object{routerKey, obj})
			keptRouterType = observedRoutingLogic(o)
		}
	}
	return ms, keep, freezeRouter, frozenPools, keptRouterType
}

// observedRouterArgs are the arguments of the observed router's container.
func observedRouterArgs(o Observed) []any {
	containers, _, _ := unstructured.NestedSlice(o.Object(routerKey), "spec", "template", "spec", "containers")
	for _, c := range containers {
		if m, ok := c.(map[string]any); ok && m["name"] == routerContainer {
			args, _ := m["args"].([]any)
			return args
		}
	}
	return nil
}

// observedRoutingLogic is the --routing-logic the observed router runs; ""
// when it says none.
func observedRoutingLogic(o Observed) string {
	for _, a := range observedRouterArgs(o) {
		if v, ok := a.(string); ok && strings.HasPrefix(v, "--routing-logic=") {
			return strings.TrimPrefix(v, "--routing-logic=")
		}
	}
	return ""
}

// poolKeys are the objects of a model's pool that decide which pods serve
// it and how: the pool (its selector), the picker's configuration, and the
// picker's Deployment, which reads the configuration at start.
func poolKeys(modelID string) []keyed {
	return []keyed{
		{engineKey(modelID) + "-inferencepool", inferencepool.PoolAPIVersion, inferencepool.PoolKind},
		{pickerKey(modelID) + "-config", "v1", "ConfigMap"},
		{pickerKey(modelID), "apps/v1", "Deployment"},
	}
}

// frozenPoolObjects are the observed pool objects of the models whose
// disaggregation changes while their new workload is not ready: kept as
// observed, in place of the new ones, so the picker keeps serving the old
// workload, as the router keeps its logic.
func frozenPoolObjects(o Observed, frozenPools []string) map[string]Object {
	out := map[string]Object{}
	for _, id := range frozenPools {
		for _, k := range poolKeys(id) {
			if obj, ok := keptObject(o, k, nil); ok {
				out[k.key] = Object{k.key, obj}
			}
		}
	}
	return out
}

// pickerRuns reports whether the observed pool of e's model selects as the
// stack renders it now and its picker is ready with the configuration and
// pod annotations rendered now.
func pickerRuns(s *resolvedStack, o Observed, e engine) bool {
	m, _ := poolModel(e)
	p := pool(s, m)
	id := m.id
	if !o.Ready(pickerKey(id)) {
		return false
	}
	sel, _, _ := unstructured.NestedStringMap(o.Object(engineKey(id)+"-inferencepool"), "spec", "selector", "matchLabels")
	data, _, _ := unstructured.NestedString(o.Object(pickerKey(id)+"-config"), "data", inferencepool.ConfigKey)
	annots, _, _ := unstructured.NestedStringMap(o.Object(pickerKey(id)), "spec", "template", "metadata", "annotations")
	return maps.Equal(sel, p.Selector) && data == inferencepool.ConfigMap(p).Data[inferencepool.ConfigKey] &&
		annots[inferencepool.AnnotationConfig] == inferencepool.ConfigDigest(inferencepool.ConfigMap(p).Data[inferencepool.ConfigKey])
}

// routerRuns reports whether the observed router is ready and runs the
// arguments the stack renders for it now.
func routerRuns(s *resolvedStack, o Observed) bool {
	if !o.Ready(routerKey) {
		return false
	}
	args := observedRouterArgs(o)
	return args != nil && slices.EqualFunc(args, routerArgs(s), func(a any, b string) bool { return a == b })
}

// keptObject is the observed object of k, to compose again as it is: not in
// desired, of k's kind, with a name. Only what its owner set is kept: its
// kind, name, namespace, labels and annotations but the cluster's and
// Crossplane's (Crossplane sets its own), and every other top-level field
// (spec, data) as observed; not status, uid, resourceVersion, managedFields
// or ownerReferences.
func keptObject(o Observed, k keyed, desired map[string]bool) (*unstructured.Unstructured, bool) {
	if desired[k.key] || !o.Has(k.key) {
		return nil, false
	}
	m := o.Object(k.key)
	if m == nil || m["apiVersion"] != k.apiVersion || m["kind"] != k.kind {
		return nil, false
	}
	meta, _ := m["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	if name == "" {
		return nil, false
	}
	out := make(map[string]any, len(m))
	for f, v := range m {
		if f != "metadata" && f != "status" {
			out[f] = copyJSON(v)
		}
	}
	md := map[string]any{"name": name}
	if ns, ok := meta["namespace"].(string); ok && ns != "" {
		md["namespace"] = ns
	}
	if l, ok := meta["labels"].(map[string]any); ok && len(l) > 0 {
		md["labels"] = copyJSON(l)
	}
	if a, ok := meta["annotations"].(map[string]any); ok {
		own := map[string]any{}
		for k, v := range a {
			if !systemAnnotation(k) {
				own[k] = v
			}
		}
		if len(own) > 0 {
			md["annotations"] = copyJSON(own)
		}
	}
	out["metadata"] = md
	return &unstructured.Unstructured{Object: out}, true
}

// systemAnnotation: an annotation the cluster or Crossplane writes
// (deployment.kubernetes.io/revision, pv.kubernetes.io/bind-completed,
// crossplane.io/composition-resource-name, ...), not the stack.
func systemAnnotation(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return false
	}
	for _, d := range []string{"kubernetes.io", "k8s.io", "crossplane.io"} {
		if prefix == d || strings.HasSuffix(prefix, "."+d) {
			return true
		}
	}
	return false
}

// copyJSON copies the maps and slices of a decoded JSON value.
func copyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = copyJSON(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = copyJSON(x)
		}
		return out
	}
	return v
}
