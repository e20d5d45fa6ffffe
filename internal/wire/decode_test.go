package wire_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/vllm-project/function-vllm-stack/internal/wire"
	"github.com/vllm-project/function-vllm-stack/internal/wire/wiretest"
)

// TestDecoder checks the JSON decoder of wire.EncodeViaJSON against the
// reference on what encoding/json writes: escapes, numbers, nulls and empty
// objects at every level.
func TestDecoder(t *testing.T) {
	cases := map[string]any{
		"Scalars": map[string]any{"s": "plain", "t": true, "f": false, "z": 0, "n": -12.5e-3, "big": int64(1) << 53, "u": uint64(1) << 63},
		"Escapes": map[string]any{
			"html": "{% if a < b && c > d %}", "quote": `say "hi" \ bye`, "ctl": "tab\there\nnew\rline\x01",
			"unicode": "héllo wörld ✓ 日本 🚀", "seps": "a\u2028b\u2029c", "esc\"key": "v",
		},
		"Pruned": map[string]any{
			"null": nil, "empty": map[string]any{}, "emptyDir": map[string]any{},
			"nested":    map[string]any{"gone": map[string]any{"null": nil}, "kept": 1},
			"list":      []any{nil, map[string]any{}, map[string]any{"a": nil, "b": map[string]any{}}, []any{map[string]any{"a": nil}}, "x", 2.0},
			"emptyList": []any{},
		},
		"AllPruned": map[string]any{"a": map[string]any{"b": map[string]any{"c": nil}}},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := wire.DecodeObject(string(b))
			if err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if diff := cmp.Diff(wiretest.Reference(t, b), got, protocmp.Transform()); diff != "" {
				t.Errorf("%s (-want +got):\n%s", b, diff)
			}
		})
	}
}
