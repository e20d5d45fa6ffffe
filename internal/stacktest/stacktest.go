// Package stacktest holds the ProductionStack manifests the tests of the
// stack library and of the function start from.
package stacktest

import "strings"

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
