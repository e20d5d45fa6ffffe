package stack

import (
	"encoding/json"
	"testing"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

func minimalXR() map[string]any { return stacktest.MinimalXR() }

// refusal is why the library refuses the stack of manifest xr, as the
// function's Fatal result says it; "" when it composes the stack. The
// manifest goes through JSON first, as it reaches the function.
func refusal(t *testing.T, xr map[string]any) string {
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
		return err.Error()
	}
	s := New(Identity{Name: m.Metadata.Name, Namespace: m.Metadata.Namespace}, spec, nil)
	if err := s.Validate(raw).Err(); err != nil {
		return err.Error()
	}
	if _, err := s.Compose(func(string) bool { return false }); err != nil {
		return err.Error()
	}
	return ""
}
