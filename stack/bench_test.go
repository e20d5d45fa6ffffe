package stack

import (
	"encoding/json"
	"testing"

	"github.com/vllm-project/function-vllm-stack/bench/stacks"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// BenchmarkBuild is the library's share of RunFunction (fn's
// BenchmarkRunFunction, on the same stacks): decoding the spec, resolving and
// validating it and composing every object, without the protobuf on either
// side. Not timed in `go test ./...`.
func BenchmarkBuild(b *testing.B) {
	for _, n := range []int{1, 8, 32} {
		xr := stacks.MultiXR(n)
		if n == 1 {
			var err error
			if xr, err = stacks.SeedXR("../example/xr.yaml"); err != nil {
				b.Fatal(err)
			}
		}
		// As the function gets it: numbers are float64.
		j, err := json.Marshal(xr["spec"])
		if err != nil {
			b.Fatal(err)
		}
		var spec any
		if err := json.Unmarshal(j, &spec); err != nil {
			b.Fatal(err)
		}
		b.Run(map[int]string{1: "models-1", 8: "models-8", 32: "models-32"}[n], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s, raw, err := resolve.DecodeSpec(spec)
				if err != nil {
					b.Fatal(err)
				}
				st := New(resolve.Identity{Name: "s", Namespace: "llm"}, s, nil)
				if err := st.Validate(raw).Err(); err != nil {
					b.Fatal(err)
				}
				if _, err := st.Compose(build.Keys(func(string) bool { return true })); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
