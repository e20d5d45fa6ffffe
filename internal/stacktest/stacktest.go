// Package stacktest holds the ProductionStack manifests the tests of the
// stack library and of the function start from.
package stacktest

import (
	"encoding/json"
	"strings"
	"testing"
)

// MinimalXR is the smallest stack: one model on one GPU, in namespace llm.
func MinimalXR() map[string]any {
	return map[string]any{
		"apiVersion": "serving.vllm.ai/v1alpha1",
		"kind":       "ProductionStack",
		"metadata":   map[string]any{"name": "s", "namespace": "llm"},
		"spec": map[string]any{
			"model":     map[string]any{"name": "m", "modelURL": "org/m"},
			"resources": map[string]any{"gpu": "1"},
		},
	}
}

// With returns MinimalXR with spec fields set at dotted paths below spec
// (nil deletes the field).
func With(kv ...any) map[string]any {
	xr := MinimalXR()
	for i := 0; i < len(kv); i += 2 {
		SetPath(xr, "spec."+kv[i].(string), kv[i+1])
	}
	return xr
}

// SetPath sets the field at a dotted path of m, making the objects on the
// way; nil deletes it.
func SetPath(m map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	if v == nil {
		delete(m, parts[len(parts)-1])
		return
	}
	m[parts[len(parts)-1]] = v
}

// CompositionInput is the Input of example/composition.yaml: the router
// pinned to the chart's release.
func CompositionInput() map[string]any {
	return map[string]any{
		"apiVersion": "vllmstack.fn.crossplane.io/v1beta1",
		"kind":       "Input",
		"router":     map[string]any{"image": "lmcache/lmstack-router", "tag": "v0.1.12"},
	}
}

// AsJSON is v through JSON, as the function's request and response carry
// it: numbers become float64.
func AsJSON[T any](t testing.TB, v any) T {
	t.Helper()
	var out T
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// A Stack is what the function reads of a manifest: where the stack's
// objects go and what they are named after, as the function identifies a
// stack (a legacy XR of a claim by the claim's labels), and the spec.
type Stack struct {
	Name, Namespace string
	Legacy          bool
	Spec            any
}

// Read reads a stack manifest as the function does.
func Read(t testing.TB, xr map[string]any) Stack {
	t.Helper()
	m := AsJSON[struct {
		Metadata struct {
			Name, Namespace string
			Labels          map[string]string
		}
		Spec any
	}](t, xr)
	s := Stack{Name: m.Metadata.Name, Namespace: m.Metadata.Namespace, Spec: m.Spec}
	if claim := m.Metadata.Labels["crossplane.io/claim-name"]; s.Namespace == "" && claim != "" {
		s = Stack{Name: claim, Namespace: m.Metadata.Labels["crossplane.io/claim-namespace"], Legacy: true, Spec: m.Spec}
	}
	return s
}

// MultiXR is MinimalXR serving the given models, each by the URL org/<name>.
func MultiXR(models ...string) map[string]any {
	items := make([]any, 0, len(models))
	for _, m := range models {
		items = append(items, map[string]any{"name": m, "modelURL": "org/" + m})
	}
	xr := MinimalXR()
	xr["spec"] = map[string]any{"models": items}
	return xr
}
