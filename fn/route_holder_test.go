package fn

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// gieModelsXR is a stack of the named models on the inference extension.
func gieModelsXR(models ...string) map[string]any {
	list := make([]any, 0, len(models))
	for _, m := range models {
		list = append(list, map[string]any{"name": m, "modelURL": "org/" + m})
	}
	return topologyXR("model", nil, "routerConfig", nil, "models", list, "inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}})
}

// servingLayer is what Crossplane observes of a stack that serves: every
// object of its second reconcile, ready; with more specs, each the next
// change of the one before, observed as it settles.
func servingLayer(t *testing.T, xr map[string]any, changes ...map[string]any) map[string]map[string]any {
	t.Helper()
	observed := observeAll(t, mustRun(t, req(t, xr, nil, nil)))
	for _, next := range append([]map[string]any{xr}, changes...) {
		observed = observeAll(t, mustRun(t, req(t, next, nil, observed)))
		observed = observeAll(t, mustRun(t, req(t, next, nil, observed)))
	}
	return observed
}

// checkServed: rsp composes exactly the routes want (as routes gives them),
// says endpoint in status.endpoint, and warns exactly warnings.
func checkServed(t *testing.T, rsp *fnv1.RunFunctionResponse, want map[string][]string, endpoint string, warnings []string) {
	t.Helper()
	if diff := cmp.Diff(want, routes(t, rsp)); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
	if got := xrStatus(rsp)["endpoint"]; got != endpoint {
		t.Errorf("status.endpoint %q, want %q", got, endpoint)
	}
	if diff := cmp.Diff(warnings, warningsOf(rsp)); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

// servedModels is what Crossplane observes of a stack on the inference
// extension that served each list of models in turn, settled; nil for none.
func servedModels(t *testing.T, from [][]string) map[string]map[string]any {
	t.Helper()
	if from == nil {
		return nil
	}
	var changes []map[string]any
	for _, f := range from[1:] {
		changes = append(changes, gieModelsXR(f...))
	}
	return servingLayer(t, gieModelsXR(from[0]...), changes...)
}

// routes are the rules of every model's HTTPRoute in rsp, by key, each as
// "path pool" ("/" the gateway's root, sent unchanged; any other path
// stripped by the gateway).
func routes(t *testing.T, rsp *fnv1.RunFunctionResponse) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for k, r := range rsp.GetDesired().GetResources() {
		o := r.GetResource().AsMap()
		if o["kind"] != "HTTPRoute" {
			continue
		}
		spec, _ := o["spec"].(map[string]any)
		rules, _ := spec["rules"].([]any)
		out[k] = []string{}
		for _, ru := range rules {
			rule := ru.(map[string]any)
			path := rule["matches"].([]any)[0].(map[string]any)["path"].(map[string]any)["value"].(string)
			pool := rule["backendRefs"].([]any)[0].(map[string]any)["name"].(string)
			if _, strips := rule["filters"]; strips != (path != "/") {
				t.Errorf("%s: the rule for %s strips its prefix: %v", k, path, strips)
			}
			out[k] = append(out[k], path+" "+pool)
		}
	}
	return out
}

// wireForm is rsp as the function's codec marshals it: deterministically.
func wireForm(t *testing.T, rsp *fnv1.RunFunctionResponse) string {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rsp)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// warningsOf are the warnings of rsp but the preview's (the requests carry
// no CRD).
func warningsOf(rsp *fnv1.RunFunctionResponse) []string {
	var out []string
	for _, r := range rsp.GetResults() {
		if r.GetSeverity() == fnv1.Severity_SEVERITY_WARNING && !strings.HasPrefix(r.GetMessage(), "preview: ") {
			out = append(out, r.GetMessage())
		}
	}
	return out
}

// TestModelEndpointsStay: on the inference extension a model's endpoint
// never moves when another model is added or removed, in either order. Every
// model serves /<model>/v1 from its own HTTPRoute; the gateway's /v1 stays
// with the model that holds it, as its observed route says, whatever the
// spec's order; a removed holder hands it to no model, with a warning that
// names it; the status endpoint says where each model is.
func TestModelEndpointsStay(t *testing.T) {
	const removed = "spec.models: a held the gateway's root path (/v1) and is removed: /v1 now answers no model, and is handed to none, so that its clients get no other model's answers; the other models stay at /<model>/v1; set spec.inferenceExtension.rootModel to give /v1 to one of them"
	for _, tc := range []struct {
		name string
		// from are the specs the stack served, in order (nil: none).
		from     [][]string
		to       []string
		want     map[string][]string
		endpoint string
		warning  string
		// after is the endpoint once the change is observed.
		after string
	}{
		{name: "first model alone", from: nil, to: []string{"a"},
			want:     map[string][]string{"engine-a-httproute": {"/a s-a-pool", "/ s-a-pool"}},
			endpoint: "gateway llm/gw /v1 (a), /a/v1", after: "gateway llm/gw /v1 (a), /a/v1"},
		{name: "add a model after the holder", from: [][]string{{"a"}}, to: []string{"a", "b"},
			want:     map[string][]string{"engine-a-httproute": {"/a s-a-pool", "/ s-a-pool"}, "engine-b-httproute": {"/b s-b-pool"}},
			endpoint: "gateway llm/gw /v1 (a), /a/v1, /b/v1", after: "gateway llm/gw /v1 (a), /a/v1, /b/v1"},
		{name: "add a model before the holder", from: [][]string{{"a"}}, to: []string{"b", "a"},
			want:     map[string][]string{"engine-a-httproute": {"/a s-a-pool", "/ s-a-pool"}, "engine-b-httproute": {"/b s-b-pool"}},
			endpoint: "gateway llm/gw /v1 (a), /b/v1, /a/v1", after: "gateway llm/gw /v1 (a), /b/v1, /a/v1"},
		{name: "remove a model after the holder", from: [][]string{{"a", "b"}}, to: []string{"a"},
			want:     map[string][]string{"engine-a-httproute": {"/a s-a-pool", "/ s-a-pool"}},
			endpoint: "gateway llm/gw /v1 (a), /a/v1", after: "gateway llm/gw /v1 (a), /a/v1"},
		{name: "remove a model before the holder", from: [][]string{{"a"}, {"b", "a"}}, to: []string{"a"},
			want:     map[string][]string{"engine-a-httproute": {"/a s-a-pool", "/ s-a-pool"}},
			endpoint: "gateway llm/gw /v1 (a), /a/v1", after: "gateway llm/gw /v1 (a), /a/v1"},
		{name: "remove the holder", from: [][]string{{"a", "b"}}, to: []string{"b"},
			want:     map[string][]string{"engine-b-httproute": {"/b s-b-pool"}},
			endpoint: "gateway llm/gw /b/v1", warning: removed, after: "gateway llm/gw /b/v1"},
		{name: "remove the holder, add another model first", from: [][]string{{"a", "b"}}, to: []string{"c", "b"},
			want:     map[string][]string{"engine-b-httproute": {"/b s-b-pool"}, "engine-c-httproute": {"/c s-c-pool"}},
			endpoint: "gateway llm/gw /c/v1, /b/v1", warning: removed, after: "gateway llm/gw /c/v1, /b/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			observed := servedModels(t, tc.from)
			rsp := mustRun(t, req(t, gieModelsXR(tc.to...), nil, observed))
			var warnings []string
			if tc.warning != "" {
				warnings = []string{tc.warning}
			}
			checkServed(t, rsp, tc.want, tc.endpoint, warnings)
			// The change observed (the removed model's route deleted):
			// nothing moves, and the warning is not repeated.
			again := mustRun(t, req(t, gieModelsXR(tc.to...), nil, observeAll(t, rsp)))
			if diff := cmp.Diff(tc.want, routes(t, again)); diff != "" {
				t.Errorf("routes once observed (-want +got):\n%s", diff)
			}
			if got := xrStatus(again)["endpoint"]; got != tc.after {
				t.Errorf("status.endpoint once observed %q, want %q", got, tc.after)
			}
			if w := warningsOf(again); len(w) != 0 {
				t.Errorf("warnings once observed: %q", w)
			}
			// Deterministic: the same request, the same bytes.
			r := req(t, gieModelsXR(tc.to...), nil, observed)
			if a, b := wireForm(t, mustRun(t, r)), wireForm(t, mustRun(t, r)); a != b {
				t.Errorf("two responses to one request differ")
			}
		})
	}
}

// TestModelEndpointsFromOneRoute: a stack served by the single HTTPRoute of
// earlier releases (inference-httproute) keeps it, as observed, until every
// model's own route is observed, then drops it; the model it sent / to
// keeps /v1, and a route of several models, which sent / to none, leaves
// /v1 to none.
func TestModelEndpointsFromOneRoute(t *testing.T) {
	rule := func(path, pool string) any {
		r := map[string]any{
			"matches":     []any{map[string]any{"path": map[string]any{"type": "PathPrefix", "value": path}}},
			"backendRefs": []any{map[string]any{"group": "inference.networking.k8s.io", "kind": "InferencePool", "name": pool}},
		}
		if path != "/" {
			r["filters"] = []any{map[string]any{"type": "URLRewrite", "urlRewrite": map[string]any{"path": map[string]any{"type": "ReplacePrefixMatch", "replacePrefixMatch": "/"}}}}
		}
		return r
	}
	for _, tc := range []struct {
		name   string
		models []string
		rules  []any
		want   map[string][]string
	}{
		{"one model, a second added", []string{"b", "a"}, []any{rule("/", "s-a-pool")},
			map[string][]string{"engine-a-httproute": {"/a s-a-pool", "/ s-a-pool"}, "engine-b-httproute": {"/b s-b-pool"}}},
		{"two models", []string{"a", "b"}, []any{rule("/a", "s-a-pool"), rule("/b", "s-b-pool")},
			map[string][]string{"engine-a-httproute": {"/a s-a-pool"}, "engine-b-httproute": {"/b s-b-pool"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			observed := servingLayer(t, gieModelsXR(tc.models...))
			for k := range observed {
				if strings.HasSuffix(k, "-httproute") {
					delete(observed, k)
				}
			}
			legacy := stacktest.ObservedObject("gateway.networking.k8s.io/v1", "HTTPRoute", "s-inference-route")
			legacy["spec"] = map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}, "rules": tc.rules}
			observed["inference-httproute"] = legacy

			rsp := mustRun(t, req(t, gieModelsXR(tc.models...), nil, observed))
			want := map[string][]string{"inference-httproute": {}}
			for k, v := range tc.want {
				want[k] = v
			}
			for _, r := range tc.rules {
				m := r.(map[string]any)
				path := m["matches"].([]any)[0].(map[string]any)["path"].(map[string]any)["value"].(string)
				want["inference-httproute"] = append(want["inference-httproute"], path+" "+m["backendRefs"].([]any)[0].(map[string]any)["name"].(string))
			}
			// The old route kept as observed beside the models' own.
			if diff := cmp.Diff(want, routes(t, rsp)); diff != "" {
				t.Errorf("routes (-want +got):\n%s", diff)
			}
			// The models' routes observed: the old one goes.
			for k, r := range rsp.GetDesired().GetResources() {
				if strings.HasSuffix(k, "-httproute") && k != "inference-httproute" {
					observed[k] = observedAs(t, k, r, true)
				}
			}
			next := mustRun(t, req(t, gieModelsXR(tc.models...), nil, observed))
			if diff := cmp.Diff(tc.want, routes(t, next)); diff != "" {
				t.Errorf("routes once the models' own are observed (-want +got):\n%s", diff)
			}
		})
	}
}

// rootModelXR is gieModelsXR with spec.inferenceExtension.rootModel.
func rootModelXR(root string, models ...string) map[string]any {
	xr := gieModelsXR(models...)
	stacktest.SetPath(xr, "spec.inferenceExtension.rootModel", root)
	return xr
}

// TestRootModel: spec.inferenceExtension.rootModel gives the gateway's /v1
// to the model it names: away from the model that holds it, or to one
// again after the holder was removed (without the removal's warning); once
// observed it stays with that model when rootModel is unset again; a name
// that is no model of the stack is refused.
func TestRootModel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		from     [][]string
		to       map[string]any
		want     map[string][]string
		endpoint string
	}{
		{name: "move /v1 to another model", from: [][]string{{"a", "b"}}, to: rootModelXR("b", "a", "b"),
			want:     map[string][]string{"engine-a-httproute": {"/a s-a-pool"}, "engine-b-httproute": {"/b s-b-pool", "/ s-b-pool"}},
			endpoint: "gateway llm/gw /v1 (b), /a/v1, /b/v1"},
		{name: "give /v1 again after its holder was removed", from: [][]string{{"a", "b"}, {"b"}}, to: rootModelXR("b", "b"),
			want:     map[string][]string{"engine-b-httproute": {"/b s-b-pool", "/ s-b-pool"}},
			endpoint: "gateway llm/gw /v1 (b), /b/v1"},
		{name: "a new stack", to: rootModelXR("b", "a", "b"),
			want:     map[string][]string{"engine-a-httproute": {"/a s-a-pool"}, "engine-b-httproute": {"/b s-b-pool", "/ s-b-pool"}},
			endpoint: "gateway llm/gw /v1 (b), /a/v1, /b/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			observed := servedModels(t, tc.from)
			rsp := mustRun(t, req(t, tc.to, nil, observed))
			checkServed(t, rsp, tc.want, tc.endpoint, nil)
			// Observed, then rootModel unset: /v1 stays where it went.
			unset := tc.to
			stacktest.SetPath(unset, "spec.inferenceExtension.rootModel", nil)
			again := mustRun(t, req(t, unset, nil, observeAll(t, rsp)))
			if diff := cmp.Diff(tc.want, routes(t, again)); diff != "" {
				t.Errorf("routes with rootModel unset (-want +got):\n%s", diff)
			}
		})
	}
	got := fatal(t, run(t, req(t, rootModelXR("c", "a", "b"), nil, nil)))
	if want := `invalid ProductionStack: spec.inferenceExtension.rootModel "c" is not a model of the stack: name one of "a", "b", or remove rootModel`; got != want {
		t.Errorf("Fatal message:\n got: %s\nwant: %s", got, want)
	}
}
