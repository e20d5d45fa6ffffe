package fn

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// compositionInput is the Input of example/composition.yaml.
func compositionInput() map[string]any {
	return map[string]any{
		"apiVersion": "vllmstack.fn.crossplane.io/v1beta1",
		"kind":       "Input",
		"router":     map[string]any{"image": "lmcache/lmstack-router", "tag": "v0.1.12"},
	}
}

// TestRunFunctionGolden renders each example stack and compares the whole
// response, every object, arg and env var, with a reviewed golden file.
func TestRunFunctionGolden(t *testing.T) {
	cases := map[string]struct {
		xr       func(t *testing.T) map[string]any
		input    map[string]any
		observed func(t *testing.T) map[string]map[string]any
	}{
		"seed": {
			xr: seedXR,
		},
		"seed-with-input": {
			xr:    seedXR,
			input: compositionInput(),
		},
		"claim": {
			xr: func(t *testing.T) map[string]any { return loadXR(t, "../example/stacks/legacy-xr.yaml", "") },
		},
		"multi-model": {
			xr: func(t *testing.T) map[string]any { return loadXR(t, "../example/stacks/multi-model.yaml", "") },
		},
		"lmcache": {
			xr: func(t *testing.T) map[string]any { return loadXR(t, "../example/stacks/lmcache.yaml", "") },
		},
		"session": {
			xr: func(t *testing.T) map[string]any { return loadXR(t, "../example/stacks/session.yaml", "") },
		},
		"production": {
			xr: func(t *testing.T) map[string]any { return loadXR(t, "../example/stacks/production.yaml", "") },
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var observed map[string]map[string]any
			if tc.observed != nil {
				observed = tc.observed(t)
			}
			rsp := mustRun(t, req(t, tc.xr(t), tc.input, observed))
			goldenCompare(t, name, rsp)
		})
	}
}

// TestDeterministic: the same request gives a byte-identical response, so
// Crossplane never sees a change where there is none.
func TestDeterministic(t *testing.T) {
	for _, path := range []string{"../example/xr.yaml", "../example/stacks/multi-model.yaml"} {
		r := req(t, loadXR(t, path, "llm"), compositionInput(), nil)
		opts := proto.MarshalOptions{Deterministic: true}
		first, err := opts.Marshal(mustRun(t, r))
		if err != nil {
			t.Fatal(err)
		}
		for range 20 {
			again, err := opts.Marshal(mustRun(t, proto.Clone(r).(*fnv1.RunFunctionRequest)))
			if err != nil {
				t.Fatal(err)
			}
			if string(again) != string(first) {
				t.Fatalf("%s: two runs of the same request gave different responses", path)
			}
		}
	}
}

func TestTTL(t *testing.T) {
	cases := map[string]struct {
		opts  []Option
		input map[string]any
		want  time.Duration
	}{
		"Default":   {want: time.Minute},
		"Flag":      {opts: []Option{WithTTL(15 * time.Second)}, want: 15 * time.Second},
		"InputWins": {opts: []Option{WithTTL(15 * time.Second)}, input: map[string]any{"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input", "ttl": "2m"}, want: 2 * time.Minute},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp, err := New(logging.NewNopLogger(), tc.opts...).RunFunction(t.Context(), req(t, seedXR(t), tc.input, nil))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(durationpb.New(tc.want).AsDuration(), rsp.GetMeta().GetTtl().AsDuration()); diff != "" {
				t.Errorf("ttl (-want +got):\n%s", diff)
			}
			if got := rsp.GetMeta().GetTag(); got != "test" {
				t.Errorf("response tag = %q, want the request's tag %q", got, "test")
			}
		})
	}
}

// TestKeepsOtherDesiredResources: resources that earlier pipeline steps
// desired are passed on.
func TestKeepsOtherDesiredResources(t *testing.T) {
	r := req(t, seedXR(t), nil, nil)
	r.Desired = &fnv1.State{Resources: map[string]*fnv1.Resource{
		"extra": {Resource: toStruct(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "extra"}})},
	}}
	rsp := mustRun(t, r)
	if _, ok := rsp.GetDesired().GetResources()["extra"]; !ok {
		t.Errorf("the desired resource of an earlier step was dropped; have %v", keys(rsp))
	}
	if n := len(rsp.GetDesired().GetResources()); n != 8 {
		t.Errorf("got %d desired resources, want the 7 the seed stack's first reconcile composes plus 1 earlier: %v", n, keys(rsp))
	}
}
