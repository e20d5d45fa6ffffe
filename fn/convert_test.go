package fn

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// reference is what composedStruct computes, the straightforward way: JSON
// decoded into a map, pruned, converted with structpb.NewStruct.
func reference(t *testing.T, b []byte) *structpb.Struct {
	t.Helper()
	var prune func(m map[string]any)
	prune = func(m map[string]any) {
		for k, v := range m {
			switch v := v.(type) {
			case nil:
				delete(m, k)
			case map[string]any:
				prune(v)
				if len(v) == 0 && !keepEmpty[k] {
					delete(m, k)
				}
			case []any:
				for _, e := range v {
					if e, ok := e.(map[string]any); ok {
						prune(e)
					}
				}
			}
		}
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	prune(m)
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDecoder checks the JSON decoder of composedStruct against the
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
			d := decoder{data: string(b)}
			got, err := d.object(true)
			if err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			if diff := cmp.Diff(reference(t, b), got, protocmp.Transform()); diff != "" {
				t.Errorf("%s (-want +got):\n%s", b, diff)
			}
		})
	}
}

// TestComposedStruct: every object of the example stacks converts as the
// reference converts it.
func TestComposedStruct(t *testing.T) {
	for _, path := range []string{"../example/xr.yaml", "../example/stacks/multi-model.yaml", "../example/stacks/lmcache.yaml", "../example/stacks/production.yaml"} {
		for _, o := range composedObjects(t, req(t, stacktest.LoadXR(t, path, "llm"), compositionInput(), nil)) {
			got, err := composedStruct(o.Obj)
			if err != nil {
				t.Fatalf("%s %s: %v", path, o.Key, err)
			}
			b, err := json.Marshal(o.Obj)
			if err != nil {
				t.Fatal(err)
			}
			want := reference(t, b)
			delete(want.Fields, "status")
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("%s %s (-want +got):\n%s", path, o.Key, diff)
			}
		}
	}
}
