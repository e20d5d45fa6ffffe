package fn

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"google.golang.org/protobuf/types/known/durationpb"
	"k8s.io/utils/ptr"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// logEntry is what a recordingLogger keeps of one entry.
type logEntry struct {
	msg string
	kv  map[string]string
}

// recordingLogger keeps every entry logged through it; a logger made by its
// WithValues (the embedded nop logger's) logs nothing: the panic's entry is
// logged on the Function's own logger.
type recordingLogger struct {
	logging.Logger
	entries *[]logEntry
}

func newRecordingLogger() recordingLogger {
	return recordingLogger{Logger: logging.NewNopLogger(), entries: &[]logEntry{}}
}

func (l recordingLogger) Info(msg string, kv ...any)  { l.add(msg, kv) }
func (l recordingLogger) Debug(msg string, kv ...any) { l.add(msg, kv) }

func (l recordingLogger) add(msg string, kv []any) {
	e := logEntry{msg: msg, kv: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		e.kv[fmt.Sprint(kv[i])] = fmt.Sprint(kv[i+1])
	}
	*l.entries = append(*l.entries, e)
}

// panicking makes testHook panic with v for the rest of the test.
func panicking(t *testing.T, v any) {
	t.Helper()
	saved := testHook
	testHook = func() { panic(v) }
	t.Cleanup(func() { testHook = saved })
}

// TestRunFunctionPanics: a panic anywhere in RunFunction, a bug of the
// function, becomes a Fatal result for that one stack, through the refusal
// path, instead of ending the process (neither the SDK nor gRPC recovers
// one: Crossplane saw `rpc error: code = Unavailable` and every other call
// in flight failed too). The response is made afresh from the request:
// nothing the call had written (status, requirements) goes out, and what
// earlier steps desired is passed on as it came. It names the XR and says
// what to do; the panic and its stack trace go to the log, not into the
// response, which is the same on every call.
func TestRunFunctionPanics(t *testing.T) {
	prior := &fnv1.State{Resources: map[string]*fnv1.Resource{
		"engine-m": {Resource: toStruct(t, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "kept"}})},
	}}
	long := strings.Repeat("n", 100000)
	cases := map[string]struct {
		xr   map[string]any
		want string // the XR as the message names it
		log  [3]string
	}{
		"Namespaced": {
			xr:   seedXR(t),
			want: `ProductionStack "test-stack" in namespace "llm"`,
			log:  [3]string{"ProductionStack", "test-stack", "llm"},
		},
		"Legacy": {
			xr:   stacktest.LoadXR(t, "../example/stacks/legacy-xr.yaml", ""),
			want: `XProductionStack "test-stack-7xk2p"`,
			log:  [3]string{"XProductionStack", "test-stack-7xk2p", ""},
		},
		// The message stays bounded whatever the XR's metadata holds.
		"Hostile": {
			xr: func() map[string]any {
				xr := seedXR(t)
				xr["kind"] = "Production Stack\n"
				xr["metadata"].(map[string]any)["name"] = long
				return xr
			}(),
			want: `XR "` + long[:64] + `" (100000 characters in all) in namespace "llm"`,
			log:  [3]string{"Production Stack\n", long, "llm"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			panicking(t, "boom")
			r := req(t, tc.xr, compositionInput(), nil)
			r.Desired = proto.Clone(prior).(*fnv1.State)
			log := newRecordingLogger()
			f := New(log)
			rsp, err := f.RunFunction(context.Background(), proto.Clone(r).(*fnv1.RunFunctionRequest))
			if err != nil {
				t.Fatalf("RunFunction returned an error, want a Fatal result: %v", err)
			}
			msg := "internal error: function-vllm-stack panicked composing " + tc.want + "; this is a bug in the function, not a mistake in the stack: " +
				`report it at https://github.com/vllm-project/function-vllm-stack/issues with this message and the function's log entry ` +
				`"RunFunction panicked: a bug in the function" for this stack, which holds the details`
			want := &fnv1.RunFunctionResponse{
				Meta:    &fnv1.ResponseMeta{Tag: "test", Ttl: durationpb.New(time.Minute)},
				Desired: prior,
				Results: []*fnv1.Result{
					{Severity: fnv1.Severity_SEVERITY_WARNING, Message: msg, Target: fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum()},
					{Severity: fnv1.Severity_SEVERITY_FATAL, Message: msg, Target: fnv1.Target_TARGET_COMPOSITE.Enum()},
				},
			}
			for _, typ := range []string{"EnginesReady", "RouterReady", "StorageReady"} {
				want.Conditions = append(want.Conditions, &fnv1.Condition{Type: typ, Status: fnv1.Status_STATUS_CONDITION_FALSE, Reason: "Refused",
					Message: ptr.To("The function refused the stack, so nothing was applied and what runs is unchanged: " + msg), Target: fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum()})
			}
			if diff := cmp.Diff(want, rsp, protocmp.Transform()); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			again, err := f.RunFunction(context.Background(), proto.Clone(r).(*fnv1.RunFunctionRequest))
			if err != nil || !sameBytes(t, rsp, again) {
				t.Errorf("two calls that panic the same way gave different responses (error %v)", err)
			}

			if n := len(*log.entries); n != 2 {
				t.Fatalf("logged %d entries, want one for each call: %v", n, *log.entries)
			}
			e := (*log.entries)[0]
			if e.msg != panicLog {
				t.Errorf("log message = %q, want %q", e.msg, panicLog)
			}
			for i, k := range []string{"xr-kind", "xr-name", "xr-namespace"} {
				if e.kv[k] != tc.log[i] {
					t.Errorf("log %s = %.80q, want %.80q", k, e.kv[k], tc.log[i])
				}
			}
			if e.kv["panic"] != "boom" {
				t.Errorf("log panic = %q, want the panic's value %q", e.kv["panic"], "boom")
			}
			// The stack trace reaches the frame that panicked.
			for _, frame := range []string{"fn.(*Function).compose(", "fn/panic_test.go:"} {
				if !strings.Contains(e.kv["stack"], frame) {
					t.Errorf("the logged stack trace has no frame %q:\n%s", frame, e.kv["stack"])
				}
			}
		})
	}
}

// TestGroupQuantityPanics: quantities of a disaggregation group's resources
// that are none passed validation and made resource.MustParse panic
// (issue 29), which ended the process. The function refuses the stack with
// a message naming the field (a panic anywhere would be its internal error,
// TestRunFunctionPanics).
func TestGroupQuantityPanics(t *testing.T) {
	for field, v := range map[string]string{"memory": "lots", "cpu": "x", "cpuLimit": "8 cores"} {
		t.Run(field, func(t *testing.T) {
			xr := stacktest.LoadXR(t, "../example/stacks/disaggregated.yaml", "")
			path := "spec.disaggregation.decode.resources." + field
			stacktest.SetPath(xr, path, v)
			r := req(t, xr, compositionInput(), nil)
			rsp := run(t, proto.Clone(r).(*fnv1.RunFunctionRequest))
			want := fmt.Sprintf("invalid ProductionStack: %s %q is not a Kubernetes quantity", path, v)
			if msg := fatal(t, rsp); !strings.HasPrefix(msg, want) {
				t.Errorf("Fatal message:\n got: %s\nwant: %s…", msg, want)
			}
			if !sameBytes(t, rsp, run(t, r)) {
				t.Errorf("two calls gave different responses")
			}
		})
	}
}

func sameBytes(t *testing.T, a, b proto.Message) bool {
	t.Helper()
	opts := proto.MarshalOptions{Deterministic: true}
	x, err := opts.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := opts.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(x) == string(y)
}
