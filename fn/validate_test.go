package fn

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
	"k8s.io/utils/ptr"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// TestFatalLeavesDesiredUntouched: a bad spec must not change what earlier
// steps desired, so Crossplane applies nothing new and the stack keeps
// running as it was.
func TestFatalLeavesDesiredUntouched(t *testing.T) {
	r := req(t, with("replicas", -1), nil, nil)
	prior := &fnv1.State{Resources: map[string]*fnv1.Resource{
		"engine-m": {Resource: toStruct(t, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "kept"}})},
	}}
	r.Desired = prior
	rsp := run(t, r)
	if len(rsp.GetDesired().GetResources()) != 1 || rsp.GetDesired().GetResources()["engine-m"].GetResource().GetFields()["metadata"].GetStructValue().GetFields()["name"].GetStringValue() != "kept" {
		t.Errorf("desired state changed on a Fatal result: %v", rsp.GetDesired())
	}
	// The message reaches the claim too: a warning event before the Fatal
	// (Crossplane reads results up to the first Fatal), and the stack's
	// conditions False, which Crossplane applies on a Fatal.
	const msg = "invalid ProductionStack: spec.replicas -1 is invalid: must be 0 or more"
	want := []*fnv1.Result{
		{Severity: fnv1.Severity_SEVERITY_WARNING, Message: msg, Target: fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum()},
		{Severity: fnv1.Severity_SEVERITY_FATAL, Message: msg, Target: fnv1.Target_TARGET_COMPOSITE.Enum()},
	}
	if diff := cmp.Diff(want, rsp.GetResults(), protocmp.Transform()); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	var conds []*fnv1.Condition
	for _, typ := range []string{"EnginesReady", "RouterReady", "StorageReady"} {
		conds = append(conds, &fnv1.Condition{Type: typ, Status: fnv1.Status_STATUS_CONDITION_FALSE, Reason: "Refused",
			Message: ptr.To("The function refused the stack, so nothing was applied and what runs is unchanged: " + msg), Target: fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum()})
	}
	if diff := cmp.Diff(conds, rsp.GetConditions(), protocmp.Transform()); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
}

func TestWarnings(t *testing.T) {
	cases := map[string]struct {
		xr   map[string]any
		want []string
	}{
		"None": {xr: minimalXR()},
		"MaxLorasWithoutLoRA": {
			xr:   with("vllmConfig.maxLoras", 4),
			want: []string{"spec: vllmConfig.maxLoras 4 has no effect because spec.model.enableLoRA is false"},
		},
		"ReadWriteOnceWithReplicas": {
			xr:   with("replicas", 2),
			want: []string{"spec: storage is ReadWriteOnce but replicas is 2: replicas scheduled on other nodes cannot mount the model cache; use accessModes [ReadWriteMany] or one replica"},
		},
		"ReadWriteManyWithReplicas": {xr: with("replicas", 2, "storage.accessModes", []any{"ReadWriteMany"})},
		"NoStorageWithReplicas":     {xr: with("replicas", 2, "storage.enabled", false)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := mustRun(t, req(t, tc.xr, nil, nil))
			var got []string
			for _, r := range rsp.GetResults() {
				if r.GetSeverity() != fnv1.Severity_SEVERITY_WARNING {
					t.Errorf("unexpected result severity %v: %s", r.GetSeverity(), r.GetMessage())
				}
				if r.GetTarget() != fnv1.Target_TARGET_COMPOSITE_AND_CLAIM {
					t.Errorf("warning should reach the claim too, target = %v", r.GetTarget())
				}
				got = append(got, r.GetMessage())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("warnings:\n got: %q\nwant: %q", got, tc.want)
			}
			if len(rsp.GetDesired().GetResources()) == 0 {
				t.Error("a warning must not stop the stack from being composed")
			}
		})
	}
}
