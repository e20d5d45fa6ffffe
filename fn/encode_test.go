package fn

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/internal/wire"
	"github.com/vllm-project/function-vllm-stack/internal/wire/wiretest"
)

// The encoders of package wire on every object the function composes for
// the examples; internal/wire tests them on any object.

// TestEncoderIsJSON: every object the function composes for every example,
// test and converted stack, on the first reconcile and the next.
func TestEncoderIsJSON(t *testing.T) {
	var paths []string
	for _, glob := range []string{"../example/xr.yaml", "../example/stacks/*.yaml", "../test/render/testdata/full.yaml", "../test/render/testdata/warnings.yaml", "../cmd/helm2stack/testdata/scenarios/*.stack.yaml"} {
		m, err := filepath.Glob(glob)
		if err != nil || len(m) == 0 {
			t.Fatalf("%s matches nothing (%v)", glob, err)
		}
		paths = append(paths, m...)
	}
	n := 0
	for _, path := range paths {
		for _, observed := range []bool{false, true} {
			r := req(t, stacktest.LoadXR(t, path, ""), compositionInput(), nil)
			if observed {
				r = reconciledRequest(t, stacktest.LoadXR(t, path, ""), compositionInput())
			}
			for _, o := range composedObjects(t, r) {
				wiretest.SameAsJSON(t, path+" "+o.Key, o.Obj)
				n++
			}
		}
	}
	if n < 100 {
		t.Errorf("only %d objects compared", n)
	}
}

// TestComposedStruct: every object of the example stacks converts as the
// reference (wiretest.Reference) converts it.
func TestComposedStruct(t *testing.T) {
	for _, path := range []string{"../example/xr.yaml", "../example/stacks/multi-model.yaml", "../example/stacks/lmcache.yaml", "../example/stacks/production.yaml"} {
		for _, o := range composedObjects(t, req(t, stacktest.LoadXR(t, path, "llm"), compositionInput(), nil)) {
			got, err := wire.EncodeViaJSON(o.Obj)
			if err != nil {
				t.Fatalf("%s %s: %v", path, o.Key, err)
			}
			b, err := json.Marshal(o.Obj)
			if err != nil {
				t.Fatal(err)
			}
			want := wiretest.Reference(t, b)
			delete(want.Fields, "status")
			if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
				t.Errorf("%s %s (-want +got):\n%s", path, o.Key, diff)
			}
		}
	}
}
