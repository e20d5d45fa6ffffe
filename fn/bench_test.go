package fn

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/bench/stacks"
)

// Benchmarks of RunFunction, and of the floor of the same payload: what the
// gRPC server must spend whatever the function does, unmarshalling the
// request and marshalling the response. hack/bench.sh runs both and prints
// their ratio per case. None of this is timed in `go test ./...`.

// A benchCase is a stack of models, on the first call of a reconcile
// (nothing composed yet) or once it serves (every object observed ready,
// with what the function requires of it: no pods once it serves).
type benchCase struct {
	name     string
	models   int
	observed bool
}

var benchCases = []benchCase{
	{"models-1", 1, false},
	{"models-1-observed", 1, true},
	{"models-8", 8, false},
	{"models-8-observed", 8, true},
	{"models-32", 32, false},
	{"models-32-observed", 32, true},
}

var (
	benchMu       sync.Mutex
	benchRequests = map[benchCase][]byte{}
)

// benchRequest returns the request of c, freshly decoded from its wire form
// as the gRPC server would get it. The 1-model stack is the seed,
// example/xr.yaml; the others are generated like
// example/stacks/multi-model.yaml.
func benchRequest(tb testing.TB, c benchCase) *fnv1.RunFunctionRequest {
	tb.Helper()
	benchMu.Lock()
	defer benchMu.Unlock()
	wire, ok := benchRequests[c]
	if !ok {
		xr := stacks.MultiXR(c.models)
		if c.models == 1 {
			var err error
			if xr, err = stacks.SeedXR("../example/xr.yaml"); err != nil {
				tb.Fatal(err)
			}
		}
		r, err := stacks.Request(xr, stacks.Input())
		if err != nil {
			tb.Fatal(err)
		}
		if c.observed {
			run := func(r *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
				return benchRun(tb, proto.Clone(r).(*fnv1.RunFunctionRequest)), nil
			}
			if r, _, err = stacks.Serving(r, run); err != nil {
				tb.Fatal(err)
			}
		}
		if wire, err = proto.Marshal(r); err != nil {
			tb.Fatal(err)
		}
		benchRequests[c] = wire
	}
	r := &fnv1.RunFunctionRequest{}
	if err := proto.Unmarshal(wire, r); err != nil {
		tb.Fatal(err)
	}
	return r
}

// benchRun runs the function once and fails on a Fatal result.
func benchRun(tb testing.TB, r *fnv1.RunFunctionRequest) *fnv1.RunFunctionResponse {
	tb.Helper()
	rsp, err := New(logging.NewNopLogger()).RunFunction(context.Background(), r)
	if err != nil {
		tb.Fatal(err)
	}
	for _, res := range rsp.GetResults() {
		if res.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
			tb.Fatalf("Fatal result: %s", res.GetMessage())
		}
	}
	return rsp
}

// wireSize is the size of the response as the server sends it.
func wireSize(tb testing.TB, rsp *fnv1.RunFunctionResponse) int {
	tb.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rsp)
	if err != nil {
		tb.Fatal(err)
	}
	return len(b)
}

func BenchmarkRunFunction(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			req := benchRequest(b, c)
			benchRun(b, proto.Clone(req).(*fnv1.RunFunctionRequest))
			f := New(logging.NewNopLogger())
			ctx := context.Background()
			b.ReportAllocs()
			defer cpuTime(b)()
			for b.Loop() {
				// The response starts from the request's desired state, and
				// adds to it: over gRPC every call gets a fresh one.
				req.Desired = &fnv1.State{}
				if _, err := f.RunFunction(ctx, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkFloor is the decoding of the request as the server's codec
// decodes it (pruned of what the function never reads, then
// proto.Unmarshal) plus proto.Marshal of the function's response. (The server's codec marshals deterministically,
// sorting every map's keys, which costs a third more.)
func BenchmarkFloor(b *testing.B) {
	for _, c := range benchCases {
		b.Run(c.name, func(b *testing.B) {
			req := benchRequest(b, c)
			wire, err := proto.Marshal(req)
			if err != nil {
				b.Fatal(err)
			}
			rsp := benchRun(b, req)
			size := wireSize(b, rsp)
			b.ReportAllocs()
			defer cpuTime(b)()
			for b.Loop() {
				in := &fnv1.RunFunctionRequest{}
				if err := unmarshalRequest(wire, in); err != nil {
					b.Fatal(err)
				}
				if _, err := proto.Marshal(rsp); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(wire)), "req-bytes")
			b.ReportMetric(float64(size), "rsp-bytes")
		})
	}
}

// cpuTime reports the CPU time of the process per op (cpu-ns/op), all
// threads, the garbage collector's included. It is less affected than ns/op
// when other processes compete for the machine's cores. Call the returned
// function when the loop is done.
func cpuTime(b *testing.B) func() {
	start, ok := processCPU()
	if !ok {
		return func() {}
	}
	return func() {
		end, _ := processCPU()
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}

// TestBenchRequests checks the benchmarks' fixtures: every case composes,
// and an observed stack reads as the ready stack it stands for, so the
// benchmarks exercise the path of a serving stack.
func TestBenchRequests(t *testing.T) {
	for _, c := range benchCases {
		t.Run(c.name, func(t *testing.T) {
			rsp := benchRun(t, benchRequest(t, c))
			if !c.observed {
				return
			}
			for k, r := range rsp.GetDesired().GetResources() {
				if r.GetReady() != fnv1.Ready_READY_TRUE {
					t.Errorf("%s: ready = %s, want READY_TRUE", k, r.GetReady())
				}
			}
			for _, cond := range rsp.GetConditions() {
				if cond.GetStatus() != fnv1.Status_STATUS_CONDITION_TRUE {
					t.Errorf("condition %s = %s: %s", cond.GetType(), cond.GetStatus(), cond.GetMessage())
				}
			}
			want := fmt.Sprintf("%d/%d", c.models, c.models)
			if got := xrStatus(rsp)["readyModels"]; got != want {
				t.Errorf("status.readyModels = %v, want %s", got, want)
			}
		})
	}
}
