package fn

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// compositionInput is the Input of example/composition.yaml.
func compositionInput() map[string]any { return stacktest.CompositionInput() }

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
			xr: func(t *testing.T) map[string]any { return stacktest.LoadXR(t, "../example/stacks/legacy-xr.yaml", "") },
		},
		"multi-model": {
			xr: func(t *testing.T) map[string]any {
				return stacktest.LoadXR(t, "../example/stacks/multi-model.yaml", "")
			},
		},
		"lmcache": {
			xr: func(t *testing.T) map[string]any { return stacktest.LoadXR(t, "../example/stacks/lmcache.yaml", "") },
		},
		"session": {
			xr: func(t *testing.T) map[string]any { return stacktest.LoadXR(t, "../example/stacks/session.yaml", "") },
		},
		"production": {
			xr: func(t *testing.T) map[string]any { return stacktest.LoadXR(t, "../example/stacks/production.yaml", "") },
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
		r := req(t, stacktest.LoadXR(t, path, "llm"), compositionInput(), nil)
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

// TestInputErrors: the Input's fields that go into composed objects are
// checked; a storage.size that is no quantity made the function panic
// building the claim (found by test/fuzz).
func TestInputErrors(t *testing.T) {
	input := func(kv ...any) map[string]any {
		in := map[string]any{"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input"}
		for i := 0; i < len(kv); i += 2 {
			setPath(in, kv[i].(string), kv[i+1])
		}
		return in
	}
	cases := map[string]struct {
		input map[string]any
		want  string
	}{
		// The SDK's decoder worded these differently from call to call
		// (found by test/fuzz: two runs, two responses).
		"UnknownField": {
			input: input("storage.sise", "1Gi"),
			want:  `the function's Input in the Composition has fields it does not know: unknown field "storage.sise"; check the spelling against the Input CRD (package/input)`,
		},
		"WrongType": {
			input: input("storage.size", 5),
			want:  `cannot decode the function's Input in the Composition: cannot unmarshal number into the function's Input field storage.size of type string`,
		},
		"TTLNotADuration": {
			input: input("ttl", "5 minutes"),
			want:  `cannot decode the function's Input in the Composition: the function's Input field ttl: time: unknown unit " minutes" in duration "5 minutes"; use a duration such as 30s or 2m`,
		},
		"StorageSizeNotAQuantity": {
			input: input("storage.size", "lots"),
			want:  `invalid Input in the Composition: the function's Input storage.size "lots" is invalid: use a Kubernetes quantity greater than 0, such as 50Gi`,
		},
		"StorageSizeZero": {
			input: input("storage.size", "0"),
			want:  `invalid Input in the Composition: the function's Input storage.size "0" is invalid: use a Kubernetes quantity greater than 0, such as 50Gi`,
		},
		"StorageClassName": {
			input: input("storage.storageClassName", "Fast SSD"),
			want:  `invalid Input in the Composition: the function's Input storage.storageClassName "Fast SSD" is not a valid object name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		},
		"RouterTag": {
			input: input("router.tag", "v0.1.12 "),
			want:  `invalid Input in the Composition: the function's Input router.tag "v0.1.12 " is not an image tag: use at most 128 letters, digits, '_', '.' or '-', not starting with '.' or '-', such as v0.1.12`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := fatal(t, run(t, req(t, minimalXR(), tc.input, nil))); got != tc.want {
				t.Errorf("Fatal message:\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}
