package fuzz_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// observedState is what Crossplane sends of a cluster: the observed
// composed resources by composition resource name, and the required
// resources by requirement name.
type observedState struct {
	Composed map[string]map[string]any   `json:"composed"`
	Required map[string][]map[string]any `json:"required"`
}

// FuzzObserved runs the function on a stack (seeded with the seed stack
// and test/render/testdata/full.yaml) with observed composed resources and
// required resources as a broken or hostile cluster could send them: seeded
// with example/observed/* and the CRDs of example/required, then mutated by
// the fuzzer, with up to two more values set at paths into the state (a
// value {"$repeat": n, "item": x} is n copies of x, "$long:n" a string of n
// characters: thousands of conditions, huge messages). For every input:
//
//   - the function does not panic, returns no error, and answers the same
//     request with the same bytes, whatever the order of the required
//     resources;
//   - every message is bounded (maxMessage);
//   - a Fatal result names a field;
//   - what is composed does not depend on the observed state: the same
//     objects as with nothing observed, but the router's RoleBinding once
//     its Role is observed, and the objects a change of topology keeps as
//     observed (an old workload and what serves it, the router), which
//     must be observed objects of the same kind and name;
//   - nothing of a Secret the cluster sends shows in the response.
func FuzzObserved(f *testing.F) {
	c := mustLoad(f)
	stacks := map[string][]byte{}
	for _, s := range c.stacks {
		stacks[s.name] = s.json
	}
	seed, full := stacks["example/xr.yaml"], stacks["test/render/testdata/full.yaml"]
	for _, o := range c.observed {
		st := observedState{Composed: o.composed, Required: map[string][]map[string]any{}}
		for _, p := range o.pods {
			component, _ := p["metadata"].(map[string]any)["labels"].(map[string]any)["app.kubernetes.io/component"].(string)
			req := "engine-pods"
			if component == "router" {
				req = "router-pods"
			}
			st.Required[req] = append(st.Required[req], p)
		}
		j, err := json.Marshal(st)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(seed, j, "", "", "", "")
		if o.name != "downloading" {
			continue
		}
		for _, v := range observedSeeds {
			f.Add(seed, j, v.path, v.value, v.path2, v.value2)
		}
	}
	crds := observedState{Required: map[string][]map[string]any{}}
	for _, crd := range c.crds {
		name, _ := crd["metadata"].(map[string]any)["name"].(string)
		crds.Required["crd-"+name] = []map[string]any{crd}
	}
	crds.Required["crd-scaledobjects.keda.sh"] = nil // looked for, not found
	j, err := json.Marshal(crds)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(full, j, "", "", "", "")
	f.Add(full, j, "required[crd-httproutes.gateway.networking.k8s.io][0].kind", `"ConfigMap"`, "", "")
	f.Fuzz(func(t *testing.T, xrJSON, stateJSON []byte, path, value, path2, value2 string) {
		var xr map[string]any
		if err := json.Unmarshal(xrJSON, &xr); err != nil || xr == nil {
			return
		}
		var raw map[string]any
		if err := json.Unmarshal(stateJSON, &raw); err != nil || raw == nil {
			return
		}
		for _, m := range []struct{ path, value string }{{path, value}, {path2, value2}} {
			if p := observedPath(raw, m.path); p != "" {
				setPath(raw, p, expand(parseValue(m.value)))
			}
		}
		var st observedState
		if b, err := json.Marshal(raw); err != nil || json.Unmarshal(b, &st) != nil {
			return
		}
		n := 0
		canaries(&st, &n)
		r, err := request(xr, nil, st.Composed, st.Required)
		if err != nil {
			return
		}
		rsp := runTwice(t, r)
		checkMessages(t, rsp)
		// The order of required resources says nothing.
		reversed := proto.Clone(r).(*fnv1.RunFunctionRequest)
		for _, rs := range reversed.GetRequiredResources() {
			slices.Reverse(rs.Items)
		}
		if again := runTwice(t, reversed); !sameBytes(rsp, again) {
			t.Errorf("the same required resources in another order gave another response")
		}
		if n > 0 {
			b, _ := protojson.Marshal(rsp)
			if strings.Contains(string(b), canaryMark) {
				t.Errorf("the response holds data of a Secret the cluster sent: %s", b)
			}
		}
		msg, refused := fatalOf(rsp)
		if refused {
			if !c.namesField(msg) {
				t.Errorf("the Fatal message names no field: %s", msg)
			}
			return
		}
		// What is composed does not depend on what is observed, but for
		// the RoleBinding that waits for its Role.
		var baseObserved map[string]map[string]any
		if _, ok := st.Composed["router-role"]; ok {
			baseObserved = map[string]map[string]any{"router-role": {}}
		}
		base, err := request(xr, nil, baseObserved, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := runTwice(t, base)
		if _, refused := fatalOf(want); refused {
			t.Fatalf("the stack composes with observed state and is refused without")
		}
		if got := withoutMoves(t, withoutReadiness(want), withoutReadiness(rsp), st.Composed); !sameBytes(withoutReadiness(want), got) {
			t.Errorf("the observed state changed the composed objects")
		}
	})
}

// observedSeeds are edge values of a broken or hostile cluster.
var observedSeeds = []struct{ path, value, path2, value2 string }{
	{"composed.router.status.conditions", `{"$repeat": 1000, "item": {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "quota exceeded"}}`, "", ""},
	{"composed.router.status.conditions", `{"$repeat": 1000, "item": {"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"}}`, "composed.router.status.availableReplicas", "0"},
	{"composed.router.status", `{"replicas": "many", "readyReplicas": 1e40, "conditions": "none"}`, "", ""},
	{"composed.router.status.observedGeneration", "-1", "composed.router.metadata.generation", "9007199254740993"},
	{"composed.router.metadata.name", `"$long:100000"`, "composed.router.status", `{"availableReplicas": 0}`},
	{"composed.router", `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "router"}, "data": {"token": "c2VjcmV0"}, "stringData": {"token": "secret"}}`, "", ""},
	{"composed.engine-llama-3-2-1b-instruct", `{"kind": "Deployment", "status": {"conditions": [{"type": "Available", "status": "False", "message": "$long:200000"}]}}`, "", ""},
	{"composed.engine-llama-3-2-1b-instruct-storage", `{"kind": "PersistentVolumeClaim", "status": {"phase": "$long:5000"}}`, "", ""},
	{"required[engine-pods][0].status.conditions", `{"$repeat": 1000, "item": {"type": "PodScheduled", "status": "False", "message": "0/3 nodes are available"}}`, "", ""},
	{"required[engine-pods]", `{"$repeat": 500, "item": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "same", "labels": {"app.kubernetes.io/name": "llama-3-2-1b-instruct"}}, "status": {"phase": "Pending"}}}`, "", ""},
	{"required[engine-pods][1]", `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "same", "labels": {"app.kubernetes.io/name": "llama-3-2-1b-instruct"}}, "status": {"phase": "Failed", "reason": "Evicted"}}`, "required[engine-pods][0].metadata.name", `"same"`},
	{"required[engine-pods][0]", `{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf", "labels": {"app.kubernetes.io/name": "llama-3-2-1b-instruct"}}, "data": {"token": "aGY="}}`, "", ""},
	{"required[router-pods][0].status.containerStatuses", `{"$repeat": 300, "item": {"name": "$long:300", "image": "$long:300", "state": {"waiting": {"reason": "ErrImagePull", "message": "$long:1000"}}}}`, "", ""},
	{"required[engine-pods][0].metadata.name", `"$long:70000"`, "required[engine-pods][0].status.phase", `"Failed"`},
	{"required[crd-scaledobjects.keda.sh]", `[{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}]`, "", ""},
	{"required[engine-pods][0].status.containerStatuses[0].allocatedResources", `{"cpu": "1e-17170000"}`, "required[engine-pods][0].status.phase", `"Pending"`},
	{"required[router-pods][0].status.containerStatuses[0].resources", `{"limits": {"memory": "1e17170000"}}`, "composed.router.status.availableReplicas", "0"},
}

// expand makes huge values of short fuzz inputs: {"$repeat": n, "item": x}
// is n copies of x (n at most 10000), "$long:n" a string of n characters
// (at most 1 MiB).
func expand(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if n, ok := v["$repeat"].(float64); ok && len(v) == 2 {
			l := make([]any, min(max(int(n), 0), 10000))
			for i := range l {
				l[i] = expand(v["item"])
			}
			return l
		}
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = expand(x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = expand(x)
		}
		return out
	case string:
		if n, ok := strings.CutPrefix(v, "$long:"); ok {
			if i, err := strconv.Atoi(n); err == nil && i >= 0 && i <= 1<<20 {
				return strings.Repeat("x", i)
			}
		}
	}
	return v
}

// observedPath picks the path a fuzz input names: itself when it leads into
// the state (composed.KEY... or required[NAME]...), else one of the state's
// own paths, by hash.
func observedPath(state map[string]any, p string) string {
	if p == "" {
		return ""
	}
	if strings.HasPrefix(p, "composed.") || strings.HasPrefix(p, "required[") {
		return p
	}
	var paths []string
	leafPaths(state, "", &paths)
	if len(paths) == 0 {
		return ""
	}
	slices.Sort(paths)
	h := 0
	for _, b := range []byte(p) {
		h = h*31 + int(b)
	}
	return paths[(h%len(paths)+len(paths))%len(paths)]
}

// leafPaths lists every path below v; keys with dots are written [key].
func leafPaths(v any, at string, out *[]string) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			p := at + "." + k
			if at == "" {
				p = k
			}
			if strings.ContainsAny(k, ".[]") || at == "required" {
				p = at + "[" + k + "]"
			}
			*out = append(*out, p)
			leafPaths(v[k], p, out)
		}
	case []any:
		for i, x := range v {
			p := at + "[" + strconv.Itoa(i) + "]"
			*out = append(*out, p)
			leafPaths(x, p, out)
		}
	}
}

// canaries replaces the data of every Secret in the state by canaries, and
// counts them.
func canaries(st *observedState, n *int) {
	mark := func(o map[string]any) {
		if o["kind"] != "Secret" {
			return
		}
		for _, k := range []string{"data", "stringData"} {
			if d, ok := o[k].(map[string]any); ok {
				for key := range d {
					d[key] = canary(*n)
					*n++
				}
			}
		}
	}
	for _, o := range st.Composed {
		mark(o)
	}
	for _, items := range st.Required {
		for _, o := range items {
			mark(o)
		}
	}
}

// withoutReadiness is a response's desired composed resources without their
// readiness.
// withoutMoves is got without the objects a change of topology keeps as
// observed (stack.Moves): each must be an observed object, of its kind and
// name; the router, kept as observed while another one is, is want's.
func withoutMoves(t *testing.T, want, got *fnv1.State, observed map[string]map[string]any) *fnv1.State {
	t.Helper()
	out := proto.Clone(got).(*fnv1.State)
	kept := false
	for k, r := range got.GetResources() {
		if _, ok := want.GetResources()[k]; ok {
			continue
		}
		kept = true
		o, ok := observed[k]
		g := r.GetResource().AsMap()
		switch {
		case !ok:
			t.Errorf("%s is composed, neither the stack's nor observed", k)
		case g["kind"] != o["kind"] || g["apiVersion"] != o["apiVersion"]:
			t.Errorf("%s is kept as %v %v, observed as %v %v", k, g["apiVersion"], g["kind"], o["apiVersion"], o["kind"])
		}
		delete(out.Resources, k)
	}
	if kept {
		if r, ok := want.GetResources()["router"]; ok {
			out.Resources["router"] = r
		}
	}
	// An object withheld while an object of another kind or API group is
	// observed under its key, or a model's autoscaler while another of its
	// autoscalers is observed (stack/transition/keys.go); a Deployment's spec.replicas
	// sent while its autoscaler takes it over, as its managedFields say
	// (stack/transition/handover.go).
	for k, r := range want.GetResources() {
		w := r.GetResource().AsMap()
		g, ok := got.GetResources()[k]
		switch {
		case !ok && withheld(k, w, observed):
			out.Resources[k] = r
		case ok && handingOver(w, g.GetResource().AsMap(), observed[k]):
			out.Resources[k] = r
		case !ok:
			t.Errorf("%s is not composed, and nothing observed withholds it", k)
		}
	}
	return out
}

// withheld: key k, composed as w without observed state, waits for an
// observed object to go.
func withheld(k string, w map[string]any, observed map[string]map[string]any) bool {
	if o, ok := observed[k]; ok {
		av, _ := o["apiVersion"].(string)
		kind, _ := o["kind"].(string)
		wav, _ := w["apiVersion"].(string)
		if av != "" && kind != "" && (group(av) != group(wav) || kind != w["kind"]) {
			return true
		}
	}
	for _, suffix := range []string{"-hpa", "-scaledobject"} {
		if model, ok := strings.CutSuffix(k, suffix); ok {
			for _, other := range []string{"-hpa", "-scaledobject", "-autoscaler"} {
				if _, seen := observed[model+other]; seen && other != suffix {
					return true
				}
			}
		}
	}
	return false
}

// group is the API group of an apiVersion.
func group(apiVersion string) string {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return ""
	}
	return g
}

// handingOver: g is w but for a spec.replicas w leaves to an autoscaler,
// and the observed object o has managedFields.
func handingOver(w, g, o map[string]any) bool {
	if w["kind"] != "Deployment" || o == nil {
		return false
	}
	md, _ := o["metadata"].(map[string]any)
	if _, ok := md["managedFields"]; !ok {
		return false
	}
	ws, _ := w["spec"].(map[string]any)
	gs, _ := g["spec"].(map[string]any)
	if _, ok := ws["replicas"]; ok || gs == nil {
		return false
	}
	rest := maps.Clone(gs)
	delete(rest, "replicas")
	a, _ := json.Marshal(ws)
	b, _ := json.Marshal(rest)
	return string(a) == string(b)
}

func withoutReadiness(rsp *fnv1.RunFunctionResponse) *fnv1.State {
	s := proto.Clone(rsp.GetDesired()).(*fnv1.State)
	s.Composite = nil
	for _, r := range s.GetResources() {
		r.Ready = fnv1.Ready_READY_UNSPECIFIED
	}
	return s
}
