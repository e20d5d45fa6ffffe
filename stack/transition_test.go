package stack

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// fakeObserved is an Observed of whole objects and their readiness.
type fakeObserved struct {
	objects map[string]map[string]any
	ready   map[string]bool
}

func (f fakeObserved) Has(key string) bool { _, ok := f.objects[key]; return ok }

func (f fakeObserved) Ready(key string) bool { return f.ready[key] }

func (f fakeObserved) Object(key string) map[string]any { return f.objects[key] }

func observedObj(apiVersion, kind, name string) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": "llm", "uid": "u", "resourceVersion": "3",
			"labels":      map[string]any{"model": "m"},
			"annotations": map[string]any{"crossplane.io/composition-resource-name": "x", "deployment.kubernetes.io/revision": "2", "team": "a"}},
		"spec":   map[string]any{"replicas": float64(1)},
		"status": map[string]any{"readyReplicas": float64(1)}}
}

// TestMoveRule: the old workload of a model whose topology changed is kept
// as observed while the new one is not observed or not ready, and, when
// the router's logic changes with the topology, until the router runs the
// new logic; then it goes. Only an object of the old workload's kind is
// kept, never one the stack composes for a model of its own.
func TestMoveRule(t *testing.T) {
	mn := func() map[string]any {
		return with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "multiNode", map[string]any{"podsPerReplica": 2},
			"vllmConfig.pipelineParallelSize", 2, "storage.accessModes", []any{"ReadWriteMany"})
	}
	pd := func() map[string]any { return pdXR("storage.accessModes", []any{"ReadWriteMany"}) }
	deployment := observedObj("apps/v1", "Deployment", "s-m-deployment-vllm")
	lws := observedObj("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "s-m-lws")
	router := func(s *Stack) map[string]any {
		return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "s-deployment-router"},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{
				map[string]any{"name": build.RouterContainer, "args": toAny(build.RouterArgs(s.r))}}}}}}
	}
	oldRouter := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "s-deployment-router"},
		"spec": map[string]any{"replicas": float64(1)}}
	for _, tc := range []struct {
		name       string
		xr         map[string]any
		objects    map[string]map[string]any
		ready      []string
		kept       []string // keys kept of the old topology (and the router when frozen)
		routerLive bool     // the observed router runs the stack's arguments
	}{
		{name: "new not observed", xr: mn(), objects: map[string]map[string]any{"engine-m": deployment}, ready: []string{"engine-m"}, kept: []string{"engine-m"}},
		{name: "new not ready", xr: mn(), objects: map[string]map[string]any{"engine-m": deployment, "engine-m-leaderworkerset": lws},
			ready: []string{"engine-m"}, kept: []string{"engine-m"}},
		{name: "new ready", xr: mn(), objects: map[string]map[string]any{"engine-m": deployment, "engine-m-leaderworkerset": lws},
			ready: []string{"engine-m-leaderworkerset"}},
		{name: "back before the new one was ready", xr: minimalXR(), objects: map[string]map[string]any{"engine-m": deployment, "engine-m-leaderworkerset": lws},
			ready: []string{"engine-m"}},
		{name: "old of another kind", xr: mn(), objects: map[string]map[string]any{"engine-m": lws}},
		{name: "groups not ready: the router keeps its logic", xr: pd(),
			objects: map[string]map[string]any{"engine-m": deployment, "engine-m-service": observedObj("v1", "Service", "s-m-engine-service"), "router": oldRouter},
			ready:   []string{"engine-m", "router"}, kept: []string{"engine-m", "engine-m-service", "router"}},
		{name: "groups ready, the router rolls out", xr: pd(),
			objects: map[string]map[string]any{"engine-m": deployment, "engine-m-prefill": deployment, "engine-m-decode": deployment, "router": oldRouter},
			ready:   []string{"engine-m", "engine-m-prefill", "engine-m-decode", "router"}, kept: []string{"engine-m"}},
		{name: "groups ready, the router runs their logic", xr: pd(), routerLive: true,
			objects: map[string]map[string]any{"engine-m": deployment, "engine-m-prefill": deployment, "engine-m-decode": deployment},
			ready:   []string{"engine-m-prefill", "engine-m-decode", "router"}},
		{name: "a model of its own", xr: with("model", nil, "models", []any{map[string]any{"name": "m", "modelURL": "org/m"}, map[string]any{"name": "m-decode", "modelURL": "org/d"}}),
			objects: map[string]map[string]any{"engine-m-decode": deployment}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := stacktestRead(t, tc.xr)
			s := New(m.id, m.spec, nil)
			if err := s.Validate(m.raw).Err(); err != nil {
				t.Fatal(err)
			}
			o := fakeObserved{objects: tc.objects, ready: map[string]bool{}}
			for _, k := range tc.ready {
				o.ready[k] = true
			}
			if tc.routerLive {
				o.objects["router"] = router(s)
			}
			objs, err := s.Compose(o)
			if err != nil {
				t.Fatal(err)
			}
			var kept []string
			for _, obj := range objs {
				if u, ok := obj.Obj.(*unstructured.Unstructured); ok {
					kept = append(kept, obj.Key)
					if _, ok := u.Object["status"]; ok {
						t.Errorf("%s is kept with its status", obj.Key)
					}
					md := u.Object["metadata"].(map[string]any)
					if _, ok := md["uid"]; ok {
						t.Errorf("%s is kept with its uid", obj.Key)
					}
					if a, _ := md["annotations"].(map[string]any); len(a) > 0 && !cmp.Equal(a, map[string]any{"team": "a"}) {
						t.Errorf("%s keeps annotations %v, want only the stack's", obj.Key, a)
					}
				}
			}
			if diff := cmp.Diff(tc.kept, kept); diff != "" {
				t.Errorf("kept as observed (-want +got):\n%s", diff)
			}
			if got, want := len(s.Moves()) > 0, len(tc.kept) > 0; got != want {
				t.Errorf("moves %v, want a move: %v", s.Moves(), want)
			}
			if n := len(objs) - len(kept); slices.Contains(kept, "router") {
				if slices.ContainsFunc(objs[:n], func(o build.Object) bool { return o.Key == names.RouterKey }) {
					t.Errorf("the router is both rendered and kept")
				}
			}
		})
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// TestKeysSeesNoMove: Keys knows only which objects exist, so it never keeps
// an old workload.
func TestKeysSeesNoMove(t *testing.T) {
	m := stacktestRead(t, with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "multiNode", map[string]any{"podsPerReplica": 2},
		"vllmConfig.pipelineParallelSize", 2, "storage.accessModes", []any{"ReadWriteMany"}))
	s := New(m.id, m.spec, nil)
	if _, err := s.Compose(build.Keys(func(string) bool { return true })); err != nil {
		t.Fatal(err)
	}
	if len(s.Moves()) > 0 {
		t.Errorf("moves %v with Keys", s.Moves())
	}
}

type readStack struct {
	id   resolve.Identity
	spec *v1alpha1.ProductionStackSpec
	raw  map[string]any
}

// stacktestRead decodes a manifest as the function does.
func stacktestRead(t *testing.T, xr map[string]any) readStack {
	t.Helper()
	m := stacktest.Read(t, xr)
	spec, raw, err := resolve.DecodeSpec(m.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return readStack{resolve.Identity{Name: m.Name, Namespace: m.Namespace, Legacy: m.Legacy}, spec, raw}
}
