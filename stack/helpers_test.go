package stack

import (
	"encoding/json"
	"testing"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

func minimalXR() map[string]any { return stacktest.MinimalXR() }

// built is what the library makes of a stack manifest, as the function
// does on the stack's second reconcile (every object it composed before is
// observed): the objects and warnings, or why it refuses the stack.
type built struct {
	objects  []Object
	warnings []string
	refusal  string
}

// build builds the stack of manifest xr with the library. The manifest goes
// through JSON first, as it reaches the function.
func build(t *testing.T, xr map[string]any) built {
	t.Helper()
	b, err := json.Marshal(xr)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Metadata struct{ Name, Namespace string }
		Spec     any
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	spec, raw, err := DecodeSpec(m.Spec)
	if err != nil {
		return built{refusal: err.Error()}
	}
	s := New(Identity{Name: m.Metadata.Name, Namespace: m.Metadata.Namespace}, spec, nil)
	found := s.Validate(raw)
	if err := found.Err(); err != nil {
		return built{refusal: err.Error()}
	}
	objs, err := s.Compose(func(string) bool { return true })
	if err != nil {
		return built{refusal: err.Error()}
	}
	return built{objects: objs, warnings: found.Warnings}
}

// refusal is why the library refuses the stack of manifest xr, as the
// function's Fatal result says it; "" when it composes the stack.
func refusal(t *testing.T, xr map[string]any) string {
	t.Helper()
	return build(t, xr).refusal
}
