package fn

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource/composed"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/internal/wire"
	"github.com/vllm-project/function-vllm-stack/stack"
	"github.com/vllm-project/function-vllm-stack/status"
)

// Fuzz targets of the parsers and decoders inside the function; test/fuzz
// fuzzes RunFunction as a whole. `go test ./fn` runs their seeds;
// hack/fuzz.sh fuzzes each for a bounded time.

// FuzzInputTTL: an Input ttl is either refused with a Fatal that names it or
// becomes the response's TTL as time.ParseDuration reads it.
func FuzzInputTTL(f *testing.F) {
	for _, s := range []string{"30s", "1m30s", "0s", "5", "1h1h", "-5s", "2m", "1.5h", "", "0", "292y", "9223372036s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 64 || !utf8.ValidString(s) {
			return // the Input is JSON: valid UTF-8
		}
		in := map[string]any{"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input", "ttl": s}
		rsp := run(t, req(t, minimalXR(), in, nil))
		for _, r := range rsp.GetResults() {
			if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
				if !strings.Contains(r.GetMessage(), "ttl") {
					t.Errorf("ttl %q: refused without naming ttl: %s", s, r.GetMessage())
				}
				return
			}
		}
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || rsp.GetMeta().GetTtl().AsDuration() != d {
			t.Errorf("ttl %q: the response's TTL is %v; time.ParseDuration reads %v (%v)", s, rsp.GetMeta().GetTtl().AsDuration(), d, err)
		}
	})
}

// FuzzObservedDecode: the decoder of observed state (wire.DecodeFields) and what
// package status reads of it (readiness, the progress of a Deployment, the
// issues of its pods) take any object a cluster could send: no panic, the
// same answer twice, conditions within their bound.
func FuzzObservedDecode(f *testing.F) {
	d := stacktest.ObservedDeployment("s-deployment-router", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable)
	for _, p := range []corev1.Pod{stacktest.UnschedulablePod("p"), stacktest.StartingPod("q"), stacktest.ModelPod("r", stacktest.Scheduled(stacktest.Waiting("CrashLoopBackOff", "back-off")))} {
		b, _ := json.Marshal(stacktest.ToMap(&p))
		db, _ := json.Marshal(d)
		f.Add(db, b)
	}
	f.Add([]byte(`{"kind":"Deployment","status":{"replicas":"x","conditions":[{"type":1}]}}`), []byte(`{"status":{"conditions":7}}`))
	f.Add([]byte(`{"kind":"PersistentVolumeClaim","status":{"phase":{}}}`), []byte(`{"metadata":{"name":["a"]}}`))
	f.Add([]byte(`{"kind":"ScaledObject","status":{"conditions":[{"type":"Ready","status":"True"},"x",null]}}`), []byte(`null`))
	parts := stack.Parts{
		Engines: []stack.EnginePart{{Model: "m", Key: "e", Deployment: "d", PodName: "m", ClaimKey: "e", Claim: "c"}},
		Router:  stack.RouterPart{Key: "r", Deployment: "r", ServiceKey: "e", Service: "s"},
	}
	f.Fuzz(func(t *testing.T, deployment, pod []byte) {
		var dm, pm map[string]any
		if json.Unmarshal(deployment, &dm) != nil || json.Unmarshal(pod, &pm) != nil {
			return
		}
		ds, err1 := structpb.NewStruct(dm)
		ps, err2 := structpb.NewStruct(pm)
		if err1 != nil || err2 != nil {
			return
		}
		answer := func() (bool, []status.Condition) {
			cd := composed.New()
			cd.SetUnstructuredContent(wire.DecodeFields(ds, wire.ObservedFields))
			pods := podSet{ps, ps, proto.Clone(ps).(*structpb.Struct)}
			// The one object stands for the engine, its claim and the
			// router, whatever its kind.
			observed := status.Observed{"e": &cd.Unstructured, "r": &cd.Unstructured}
			st := status.Observe(parts, observed, status.StackPods{Engines: map[string]status.Pods{"m": pods.decode}, Router: pods.decode})
			return status.Ready(&cd.Unstructured), st.Conditions()
		}
		r1, c1 := answer()
		r2, c2 := answer()
		if r1 != r2 || !slices.Equal(c1, c2) {
			t.Errorf("two decodes of the same objects differ")
		}
		for _, c := range c1 {
			if len(c.Message) > 8<<10 {
				t.Errorf("a %s message of %d bytes", c.Type, len(c.Message))
			}
		}
	})
}
