package stack

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/stack/validate"
)

// The tests build stacks the way the function does, with the library
// alone: a manifest and the Input in, as the function reads them from its
// request, the objects, warnings or the refusal out, as its response carries
// them. fn's tests drive the function itself.

func minimalXR() map[string]any { return stacktest.MinimalXR() }

// with returns minimalXR with spec fields set at dotted paths below spec.
func with(kv ...any) map[string]any { return stacktest.With(kv...) }

// A request is a stack manifest, the function's Input (nil for none) and
// the keys of the composed objects Crossplane observed.
type request struct {
	xr, input map[string]any
	observed  map[string]bool
}

func req(t *testing.T, xr, input map[string]any, observed map[string]map[string]any) request {
	t.Helper()
	r := request{xr: xr, input: input, observed: map[string]bool{}}
	for k := range observed {
		r.observed[k] = true
	}
	return r
}

// A response is what the library made of a request: the objects by key in
// the order it composed them, its warnings, or why it refused the stack.
type response struct {
	keys     []string
	objects  map[string]runtime.Object
	warnings []string
	refusal  string
}

// asJSON is v as the function reads it from its request: through JSON, so
// numbers are float64.
func asJSON[T any](t *testing.T, v any) T { return stacktest.AsJSON[T](t, v) }

// run builds the stack of r as the function does.
func run(t *testing.T, r request) response {
	t.Helper()
	in := &v1beta1.Input{}
	if r.input != nil {
		var err error
		if in, err = resolve.DecodeInput(asJSON[map[string]any](t, r.input)); err != nil {
			return response{refusal: err.Error()}
		}
		if err := validate.ValidateInput(in); err != nil {
			return response{refusal: err.Error()}
		}
	}
	m := stacktest.Read(t, r.xr)
	id := resolve.Identity{Name: m.Name, Namespace: m.Namespace, Legacy: m.Legacy}
	spec, raw, err := resolve.DecodeSpec(m.Spec)
	if err != nil {
		return response{refusal: err.Error()}
	}
	s := New(id, spec, in)
	found := s.Validate(raw)
	if err := found.Err(); err != nil {
		return response{refusal: err.Error()}
	}
	objs, err := s.Compose(build.Keys(func(key string) bool { return r.observed[key] }))
	if err != nil {
		return response{refusal: err.Error()}
	}
	rsp := response{objects: make(map[string]runtime.Object, len(objs)), warnings: found.Warnings}
	for _, o := range objs {
		rsp.keys = append(rsp.keys, o.Key)
		rsp.objects[o.Key] = o.Obj
	}
	return rsp
}

// mustRun builds the stack and fails the test when it is refused.
func mustRun(t *testing.T, r request) response {
	t.Helper()
	rsp := run(t, r)
	if rsp.refusal != "" {
		t.Fatalf("refused: %s", rsp.refusal)
	}
	return rsp
}

// reconciled builds the stack as a second reconcile does, with every object
// the first composed observed (the router's RoleBinding waits for its Role).
func reconciled(t *testing.T, xr, input map[string]any) response {
	t.Helper()
	first := run(t, req(t, xr, input, nil))
	if first.refusal != "" {
		return first
	}
	r := req(t, xr, input, nil)
	for _, k := range first.keys {
		r.observed[k] = true
	}
	return run(t, r)
}

// fatal is why the stack was refused, failing the test when it was not.
func fatal(t *testing.T, rsp response) string {
	t.Helper()
	if rsp.refusal == "" {
		t.Fatalf("the stack was not refused")
	}
	return rsp.refusal
}

// refusal is why the library refuses the stack of manifest xr, as the
// function's Fatal result says it; "" when it composes the stack.
func refusal(t *testing.T, xr map[string]any) string {
	t.Helper()
	return run(t, req(t, xr, nil, nil)).refusal
}

// desired is the object of key as the function sends it (through JSON:
// empty values pruned), decoded into a typed object.
func desired[T runtime.Object](t *testing.T, rsp response, key string, into T) T {
	t.Helper()
	o, ok := rsp.objects[key]
	if !ok {
		t.Fatalf("no object %q; have %v", key, keys(rsp))
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatalf("cannot encode object %q: %v", key, err)
	}
	sent := pruned(asJSON[map[string]any](t, m))
	delete(sent, "status")
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sent, into); err != nil {
		t.Fatalf("cannot decode object %q: %v", key, err)
	}
	return into
}

func keys(rsp response) []string { return slices.Clone(rsp.keys) }

func engineContainer0(t *testing.T, rsp response, key string) corev1.Container {
	t.Helper()
	return desired(t, rsp, key, &appsv1.Deployment{}).Spec.Template.Spec.Containers[0]
}

// objectMap is the object of key as the function sends it: its JSON form
// without status, nulls and empty objects (but emptyDir: {}).
func objectMap(t *testing.T, rsp response, key string) map[string]any {
	t.Helper()
	o, ok := rsp.objects[key]
	if !ok {
		t.Fatalf("no object %q; have %v", key, keys(rsp))
	}
	m := pruned(asJSON[map[string]any](t, o))
	delete(m, "status")
	return m
}

// pruned drops the nulls and empty objects of m's objects, as the function
// does before it sends them; a list's objects are pruned, never removed.
func pruned(m map[string]any) map[string]any {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			if len(pruned(v)) == 0 && k != "emptyDir" {
				delete(m, k)
			}
		case []any:
			for _, item := range v {
				if o, ok := item.(map[string]any); ok {
					pruned(o)
				}
			}
		}
	}
	return m
}
