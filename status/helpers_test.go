package status

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8slabels "k8s.io/apimachinery/pkg/labels"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack"
)

// The tests observe stacks the way the function does, without it: the stack
// library says what a manifest composes, the tests say what Crossplane
// observed of it and which pods run, and the status reads them. fn's tests
// check that the function carries the result into its response.

func minimalXR() map[string]any { return stacktest.MinimalXR() }

// with returns minimalXR with spec fields set at dotted paths below spec.
func with(kv ...any) map[string]any { return stacktest.With(kv...) }

// A request is a stack manifest, the Input (nil for none), what Crossplane
// observed of the stack's composed objects, by key, and the pods it sends.
type request struct {
	xr, input map[string]any
	observed  map[string]map[string]any
	pods      []corev1.Pod
}

func req(t *testing.T, xr, input map[string]any, observed map[string]map[string]any) request {
	t.Helper()
	return request{xr: xr, input: input, observed: observed}
}

// withPods adds the pods Crossplane sends for the function's pod
// requirements: those in the stack's namespace with its labels.
func withPods(t *testing.T, r request, pods ...corev1.Pod) request {
	t.Helper()
	r.pods = pods
	return r
}

// A response is the status of the stack and each composed object's
// readiness, by key.
type response struct {
	status Status
	keys   []string
	ready  map[string]bool
}

// asJSON is v through JSON, as the function's request and response carry
// it.
func asJSON[T any](t *testing.T, v any) T { return stacktest.AsJSON[T](t, v) }

// mustRun builds the stack of r with the library and reads its status.
func mustRun(t *testing.T, r request) response {
	t.Helper()
	m := stacktest.Read(t, r.xr)
	id := stack.Identity{Name: m.Name, Namespace: m.Namespace, Legacy: m.Legacy}
	var in *v1beta1.Input
	if r.input != nil {
		var err error
		if in, err = stack.DecodeInput(asJSON[map[string]any](t, r.input)); err != nil {
			t.Fatal(err)
		}
	}
	spec, raw, err := stack.DecodeSpec(m.Spec)
	if err != nil {
		t.Fatal(err)
	}
	s := stack.New(id, spec, in)
	if err := s.Validate(raw).Err(); err != nil {
		t.Fatal(err)
	}
	observed := Observed{}
	for k, o := range r.observed {
		observed[k] = &unstructured.Unstructured{Object: asJSON[map[string]any](t, o)}
	}
	objs, err := s.Compose(stack.Keys(func(key string) bool { return observed[key] != nil }))
	if err != nil {
		t.Fatal(err)
	}
	rsp := response{ready: map[string]bool{}}
	for _, o := range objs {
		rsp.keys = append(rsp.keys, o.Key)
		rsp.ready[o.Key] = Ready(observed[o.Key])
	}
	rsp.status = Observe(s.Parts(), observed, podsOf(r.pods, s))
	return rsp
}

// podsOf are the pods the function's requirements select, by engine and the
// router's.
func podsOf(pods []corev1.Pod, s *stack.Stack) StackPods {
	sp := StackPods{Engines: map[string]Pods{}}
	matching := func(component string) []corev1.Pod {
		sel := k8slabels.SelectorFromSet(s.PodLabels(component))
		var out []corev1.Pod
		for _, p := range pods {
			if p.Namespace == s.Namespace() && sel.Matches(k8slabels.Set(p.Labels)) {
				out = append(out, p)
			}
		}
		return out
	}
	engines := map[string][]corev1.Pod{}
	for _, p := range append(matching(stack.ComponentEngine), matching(stack.ComponentEngineWorker)...) {
		engines[p.Labels[stack.LabelName]] = append(engines[p.Labels[stack.LabelName]], p)
	}
	for name, ps := range engines {
		sp.Engines[name] = func() []corev1.Pod { return ps }
	}
	router := matching(stack.ComponentRouter)
	sp.Router = func() []corev1.Pod { return router }
	return sp
}

// cond is a condition as a person reads it, in the protocol's words.
type cond struct {
	Status  string
	Reason  string
	Message string
}

const (
	condTrue  = "STATUS_CONDITION_TRUE"
	condFalse = "STATUS_CONDITION_FALSE"
)

func conditionOfType(t *testing.T, rsp response, typ string) cond {
	t.Helper()
	for _, c := range rsp.status.Conditions() {
		if c.Type == typ {
			s := condFalse
			if c.True {
				s = condTrue
			}
			return cond{Status: s, Reason: c.Reason, Message: c.Message}
		}
	}
	t.Fatalf("no condition %s", typ)
	return cond{}
}

func readiness(t *testing.T, rsp response, key string) bool {
	t.Helper()
	r, ok := rsp.ready[key]
	if !ok {
		t.Fatalf("no composed object %q; have %v", key, rsp.keys)
	}
	return r
}

// xrStatus is the XR's status as the function writes it: through JSON.
func xrStatus(rsp response) map[string]any {
	b, err := json.Marshal(rsp.status.Fields())
	if err != nil {
		panic(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(err)
	}
	return m
}
