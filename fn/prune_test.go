package fn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/utils/ptr"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/internal/wire"
)

// prunedRequests are requests as Crossplane sends them: every request of
// identicalRequests, every status scenario on the first call and with its
// pods, and the benchmarks' serving stacks, whose objects carry
// managedFields, ownerReferences and whole pod templates.
func prunedRequests(t *testing.T) map[string]*fnv1.RunFunctionRequest {
	t.Helper()
	reqs := identicalRequests(t)
	for name, s := range statusScenarios() {
		r := req(t, s.xr, nil, s.observed)
		reqs["status "+name] = r
		c := cluster{pods: s.pods, crds: everyCRD()}
		with := proto.Clone(r).(*fnv1.RunFunctionRequest)
		with.RequiredResources = c.fetch(t, run(t, r).GetRequirements())
		reqs["status "+name+" with pods"] = with
	}
	for _, c := range benchCases {
		reqs["bench "+c.name] = benchRequest(t, c)
	}
	// Changes of topology and of routing layer in progress: the function
	// re-emits observed objects whole (transition.go), so the codec must
	// keep every field of them.
	all := func(string) bool { return true }
	for name, ch := range map[string]struct{ from, to func() map[string]any }{
		"multiNode on": {plainXR, lwsXR}, "disaggregation on": {plainXR, groupsXR}, "disaggregation off": {groupsXR, plainXR},
		"to the inference extension": {plainXR, gieTopologyXR}, "to the router": {gieTopologyXR, plainXR},
	} {
		first := mustRun(t, req(t, ch.from(), nil, nil))
		serving := mustRun(t, req(t, ch.from(), nil, observedLayer(t, first, all)))
		reqs["change "+name] = req(t, ch.to(), nil, observedLayer(t, serving, all))
	}
	return reqs
}

// TestPrunedRequestSameResponse: a request decoded as the server decodes it
// (wire.PruneRequest, then proto.Unmarshal) gets the response, byte for byte, of
// the request decoded whole; the pruned wire form is no larger.
func TestPrunedRequestSameResponse(t *testing.T) {
	det := proto.MarshalOptions{Deterministic: true}
	reqs := prunedRequests(t)
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range reqs {
			if !yield(k) {
				return
			}
		}
	}) {
		r := reqs[name]
		encoded, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		pruned, err := wire.PruneRequest(encoded)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(pruned) > len(encoded) {
			t.Errorf("%s: pruned %d bytes, whole %d", name, len(pruned), len(encoded))
		}
		whole, viaCodec := &fnv1.RunFunctionRequest{}, &fnv1.RunFunctionRequest{}
		if err := proto.Unmarshal(encoded, whole); err != nil {
			t.Fatal(err)
		}
		if err := unmarshalRequest(encoded, viaCodec); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := det.Marshal(run(t, whole))
		if err != nil {
			t.Fatal(err)
		}
		got, err := det.Marshal(run(t, viaCodec))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("%s: the response to the pruned request differs", name)
		}
		// What the function reads of the request is the same.
		if diff := cmp.Diff(readOf(whole), readOf(viaCodec)); diff != "" {
			t.Errorf("%s: what the function reads (-whole +pruned):\n%s", name, diff)
		}
		if testing.Verbose() && len(r.GetObserved().GetResources()) > 0 {
			t.Logf("%s: %d bytes, %d pruned", name, len(encoded), len(pruned))
		}
	}
}

// readOf is what the function reads of a request: the observed XR and
// composed objects through wire.DecodeFields, every required resource through
// wire.RequiredFields, and everything else whole.
func readOf(r *fnv1.RunFunctionRequest) map[string]any {
	out := map[string]any{"xr": wire.DecodeFields(r.GetObserved().GetComposite().GetResource(), wire.CompositeFields)}
	for k, o := range r.GetObserved().GetResources() {
		out["observed "+k] = wire.DecodeFields(o.GetResource(), wire.ObservedFields)
		out["observed "+k+" details"] = fmt.Sprint(o.GetConnectionDetails(), o.GetReady())
	}
	for k, rs := range r.GetRequiredResources() {
		var items []any
		for _, it := range rs.GetItems() {
			items = append(items, wire.DecodeFields(it.GetResource(), wire.RequiredFields))
		}
		out["required "+k] = items
		out["required "+k+" nil"] = rs == nil
	}
	rest := proto.Clone(r).(*fnv1.RunFunctionRequest)
	rest.Observed, rest.RequiredResources = nil, nil
	b, _ := proto.MarshalOptions{Deterministic: true}.Marshal(rest)
	out["rest"] = string(b)
	return out
}

// FuzzPruneRequest: whatever bytes arrive, wire.PruneRequest does not panic;
// of a request proto.Unmarshal takes, it keeps what the function reads.
func FuzzPruneRequest(f *testing.F) {
	small := &fnv1.RunFunctionRequest{Observed: &fnv1.State{Resources: map[string]*fnv1.Resource{}}, RequiredResources: map[string]*fnv1.Resources{}}
	xr, err := structpb.NewStruct(minimalXR())
	if err != nil {
		f.Fatal(err)
	}
	small.Observed.Composite = &fnv1.Resource{Resource: xr}
	for k, o := range stacktest.ObservedReady() {
		setPath(o, "metadata.managedFields", []any{map[string]any{"manager": "m", "fieldsV1": map[string]any{"f:spec": map[string]any{}}}})
		s, err := structpb.NewStruct(o)
		if err != nil {
			f.Fatal(err)
		}
		small.Observed.Resources[k] = &fnv1.Resource{Resource: s}
	}
	pod, err := structpb.NewStruct(stacktest.ToMap(ptr.To(stacktest.StartingPod("p"))))
	if err != nil {
		f.Fatal(err)
	}
	small.RequiredResources[enginePodsRequirement] = &fnv1.Resources{Items: []*fnv1.Resource{{Resource: pod}}}
	for _, r := range []*fnv1.RunFunctionRequest{small, benchRequest(f, benchCases[0])} {
		encoded, err := proto.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(encoded)
	}
	f.Add([]byte{0x12, 0x05, 0x0a, 0x03, 0x0a, 0x01, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		pruned, err := wire.PruneRequest(b)
		whole := &fnv1.RunFunctionRequest{}
		if proto.Unmarshal(b, whole) != nil || err != nil {
			return
		}
		got := &fnv1.RunFunctionRequest{}
		if err := proto.Unmarshal(pruned, got); err != nil {
			t.Fatalf("the pruned form of a request proto.Unmarshal takes does not decode: %v", err)
		}
		if diff := cmp.Diff(readOf(whole), readOf(got)); diff != "" {
			t.Errorf("what the function reads (-whole +pruned):\n%s", diff)
		}
	})
}

// BenchmarkDecode is the decoding of a request: proto.Unmarshal of its wire
// form whole, and as the server's codec decodes it (pruned first).
func BenchmarkDecode(b *testing.B) {
	for _, c := range benchCases {
		encoded, err := proto.Marshal(benchRequest(b, c))
		if err != nil {
			b.Fatal(err)
		}
		pruned, _ := wire.PruneRequest(encoded)
		for _, how := range []string{"whole", "pruned"} {
			b.Run(c.name+"/"+how, func(b *testing.B) {
				b.ReportAllocs()
				defer cpuTime(b)()
				for b.Loop() {
					r := &fnv1.RunFunctionRequest{}
					var err error
					if how == "whole" {
						err = proto.Unmarshal(encoded, r)
					} else {
						err = unmarshalRequest(encoded, r)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(encoded)), "req-bytes")
				if how == "pruned" {
					b.ReportMetric(float64(len(pruned)), "pruned-bytes")
				}
			})
		}
	}
}

// TestPruneMutatedRequests: a serving stack's request with a few bytes
// changed at random: whenever proto.Unmarshal takes it whole, it takes the
// pruned form too, and the function reads the same of both.
func TestPruneMutatedRequests(t *testing.T) {
	// Deterministic: the same bytes every run, so the same mutations hit
	// the same fields (map order would otherwise move them).
	encoded, err := proto.MarshalOptions{Deterministic: true}.Marshal(benchRequest(t, benchCases[1]))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(34, 34))
	decoded := 0
	for range 400 {
		b := slices.Clone(encoded)
		for range 1 + rng.IntN(4) {
			b[rng.IntN(len(b))] = byte(rng.IntN(256))
		}
		pruned, err := wire.PruneRequest(b)
		whole := &fnv1.RunFunctionRequest{}
		if proto.Unmarshal(b, whole) != nil || err != nil {
			continue
		}
		decoded++
		got := &fnv1.RunFunctionRequest{}
		if err := proto.Unmarshal(pruned, got); err != nil {
			t.Fatalf("the pruned form of a request proto.Unmarshal takes does not decode: %v", err)
		}
		if diff := cmp.Diff(readOf(whole), readOf(got)); diff != "" {
			t.Fatalf("what the function reads (-whole +pruned):\n%s", diff)
		}
	}
	t.Logf("%d of 400 mutated requests decode", decoded)
	if decoded < 40 {
		t.Errorf("only %d of 400 mutated requests decode", decoded)
	}
}
