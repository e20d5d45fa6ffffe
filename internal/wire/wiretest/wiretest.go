// Package wiretest holds the oracles that the tests of package wire and of
// the function check wire's encoders against. Test code only: the function
// does not link it.
package wiretest

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vllm-project/function-vllm-stack/internal/wire"
)

// Reference is what wire.EncodeViaJSON computes of the JSON b, the
// straightforward way: JSON decoded into a map, pruned, converted with
// structpb.NewStruct. It prunes as the decoder does: null members, and
// members that are objects left empty by pruning, except `emptyDir: {}`,
// which is a volume.
func Reference(t testing.TB, b []byte) *structpb.Struct {
	t.Helper()
	var prune func(m map[string]any)
	prune = func(m map[string]any) {
		for k, v := range m {
			switch v := v.(type) {
			case nil:
				delete(m, k)
			case map[string]any:
				prune(v)
				if len(v) == 0 && k != "emptyDir" {
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

// SameAsJSON fails the test unless wire.Encode gives what wire.EncodeViaJSON
// (encoding/json, then the decoder) gives for o, errors included.
func SameAsJSON(t testing.TB, what string, o runtime.Object) {
	t.Helper()
	want, wantErr := wire.EncodeViaJSON(o)
	got, gotErr := wire.Encode(o)
	if (wantErr != nil) != (gotErr != nil) {
		t.Fatalf("%s: JSON path error %v, encoder error %v", what, wantErr, gotErr)
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("%s: the encoder differs from the JSON path (-json +encoder):\n%s", what, diff)
	}
}
