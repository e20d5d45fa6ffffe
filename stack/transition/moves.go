package transition

import (
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// Result is what make before break decides over the objects a
// stack builds and what Crossplane observed: the objects to compose, and
// what the status says of the change in progress.
type Result struct {
	Objects []build.Object
	// Moves are the models changing topology.
	Moves []Move
	// KeptRouterType is the routing logic of a router kept as observed.
	KeptRouterType string
	// LayerMove says how the stack moves between routing layers, "" when
	// it does not (routingMove).
	LayerMove string
	// Withheld are the keys withheld until an observed object of another
	// kind is gone (keys.go).
	Withheld []string
	// RootHolder is the model that holds the gateway's root path on the
	// extension, "" when none does (ResolveRootHolder); notes are the
	// warnings of the change.
	RootHolder string
	Notes      []string
	// Fills are the claims' fill Jobs (storage.prefetch), as observed.
	Fills []Fill
	// Canaries are the models' canaries (model.canary), as observed.
	Canaries []Canary
}

// Decide decides, over the objects built for the stack (objs) and what
// Crossplane observed, what to compose: an autoscaled Deployment's replicas
// are handed over, a model whose topology changes keeps its old workload, a
// router or pool keeps the logic it runs, a layer of routing keeps serving
// until its successor is ready, and a key never changes kind.
func Decide(s *resolve.Stack, observed build.Observed, objs []build.Object) Result {
	handOver(s, observed, objs)
	desired := make(map[string]bool, len(objs))
	for _, o := range objs {
		desired[o.Key] = true
	}
	var t Result
	var keep []build.Object
	var freezeRouter bool
	var frozenPools []string
	t.Moves, keep, freezeRouter, frozenPools, t.KeptRouterType = moves(s, observed, desired)
	if freezeRouter {
		// The router keeps the logic it runs, as observed.
		objs = slices.DeleteFunc(objs, func(o build.Object) bool { return o.Key == names.RouterKey })
	}
	if frozen := frozenPoolObjects(observed, frozenPools); len(frozen) > 0 {
		// A pool and its picker keep serving the old workload, as observed.
		for i, o := range objs {
			if f, ok := frozen[o.Key]; ok {
				objs[i] = f
			}
		}
	}
	var keepLayer, keepRoute []build.Object
	keepLayer, t.LayerMove = routingMove(s, observed, desired)
	if resolve.ExtensionOn(s) {
		keepRoute = legacyRoute(s, observed, desired)
	}
	objs, t.Withheld = withhold(s, observed, objs)
	t.Objects = slices.Concat(objs, keep, keepLayer, keepRoute)
	return t
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
func moves(s *resolve.Stack, o build.Observed, desired map[string]bool) (ms []Move, keep []build.Object, freezeRouter bool, frozenPools []string, keptRouterType string) {
	routerCurrent := -1 // unknown until a move asks
	for i := 0; i < len(s.Engines); {
		e := s.Engines[i]
		n := 1
		if e.Role != "" {
			for n < len(s.Engines)-i && s.Engines[i+n].ModelID == e.ModelID {
				n++
			}
		}
		i += n
		cur := topologyOf(e)
		newWorkloads, _ := topologyKeys(cur, e.ModelID)
		var old []build.Object
		var oldGroups bool
		var supportKeys []keyed
		var from []string
		for _, t := range []topology{topologyDeployment, topologyLeaderWorkerSet, topologyGroups} {
			if t == cur {
				continue
			}
			workloads, support := topologyKeys(t, e.ModelID)
			found := false
			for _, k := range workloads {
				obj, ok := keptObject(o, k, desired)
				if !ok {
					continue
				}
				found = true
				old = append(old, build.Object{Key: k.key, Obj: obj})
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
		switchRouter := switchLogic && !resolve.ExtensionOn(s)
		if switchLogic && resolve.ExtensionOn(s) {
			if !newReady {
				// The pool and picker keep serving the old workload.
				frozenPools = append(frozenPools, e.ModelID)
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
				keep = append(keep, build.Object{Key: k.key, Obj: obj})
			}
		}
		ms = append(ms, Move{Model: e.Model.Name, From: strings.Join(from, " and "), To: cur.describe(), Ready: newReady})
	}
	if freezeRouter {
		obj, ok := keptObject(o, keyed{names.RouterKey, "apps/v1", "Deployment"}, nil)
		if !ok {
			freezeRouter = false
		} else {
			keep = append(keep, build.Object{Key: names.RouterKey, Obj: obj})
			keptRouterType = observedRoutingLogic(o)
		}
	}
	return ms, keep, freezeRouter, frozenPools, keptRouterType
}

// observedRouterArgs are the arguments of the observed router's container.
func observedRouterArgs(o build.Observed) []any {
	containers, _, _ := unstructured.NestedSlice(o.Object(names.RouterKey), "spec", "template", "spec", "containers")
	for _, c := range containers {
		if m, ok := c.(map[string]any); ok && m["name"] == build.RouterContainer {
			args, _ := m["args"].([]any)
			return args
		}
	}
	return nil
}

// observedRoutingLogic is the --routing-logic the observed router runs; ""
// when it says none.
func observedRoutingLogic(o build.Observed) string {
	for _, a := range observedRouterArgs(o) {
		if v, ok := a.(string); ok && strings.HasPrefix(v, "--routing-logic=") {
			return strings.TrimPrefix(v, "--routing-logic=")
		}
	}
	return ""
}

// frozenPoolObjects are the observed pool objects of the models whose
// disaggregation changes while their new workload is not ready: kept as
// observed, in place of the new ones, so the picker keeps serving the old
// workload, as the router keeps its logic.
func frozenPoolObjects(o build.Observed, frozenPools []string) map[string]build.Object {
	out := map[string]build.Object{}
	for _, id := range frozenPools {
		for _, k := range poolKeys(id) {
			if obj, ok := keptObject(o, k, nil); ok {
				out[k.key] = build.Object{Key: k.key, Obj: obj}
			}
		}
	}
	return out
}

// pickerRuns reports whether the observed pool of e's model selects as the
// stack renders it now and its picker is ready with the configuration and
// pod annotations rendered now.
func pickerRuns(s *resolve.Stack, o build.Observed, e resolve.Engine) bool {
	m, _ := resolve.PoolModel(e)
	p := build.Pool(s, m)
	id := m.ID
	if !o.Ready(names.PickerKey(id)) {
		return false
	}
	sel, _, _ := unstructured.NestedStringMap(o.Object(names.EngineKey(id)+"-inferencepool"), "spec", "selector", "matchLabels")
	data, _, _ := unstructured.NestedString(o.Object(names.PickerKey(id)+"-config"), "data", inferencepool.ConfigKey)
	annots, _, _ := unstructured.NestedStringMap(o.Object(names.PickerKey(id)), "spec", "template", "metadata", "annotations")
	return maps.Equal(sel, p.Selector) && data == inferencepool.ConfigMap(p).Data[inferencepool.ConfigKey] &&
		annots[inferencepool.AnnotationConfig] == inferencepool.ConfigDigest(inferencepool.ConfigMap(p).Data[inferencepool.ConfigKey])
}

// routerRuns reports whether the observed router is ready and runs the
// arguments the stack renders for it now.
func routerRuns(s *resolve.Stack, o build.Observed) bool {
	if !o.Ready(names.RouterKey) {
		return false
	}
	args := observedRouterArgs(o)
	return args != nil && slices.EqualFunc(args, build.RouterArgs(s), func(a any, b string) bool { return a == b })
}
