package fn

import (
	"path/filepath"
	"strings"
	"testing"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// The objects of minimalXR: stack "s", model "m", namespace "llm".

// cond is a condition of the response, as a person reads it.
type cond struct {
	Status  string
	Reason  string
	Message string
}

func conditionOfType(t *testing.T, rsp *fnv1.RunFunctionResponse, typ string) cond {
	t.Helper()
	for _, c := range rsp.GetConditions() {
		if c.GetType() == typ {
			if c.GetTarget() != fnv1.Target_TARGET_COMPOSITE_AND_CLAIM {
				t.Errorf("condition %s targets %s, want the XR and its claim", typ, c.GetTarget())
			}
			return cond{Status: c.GetStatus().String(), Reason: c.GetReason(), Message: c.GetMessage()}
		}
	}
	t.Fatalf("no condition %s in the response", typ)
	return cond{}
}

const (
	condTrue  = "STATUS_CONDITION_TRUE"
	condFalse = "STATUS_CONDITION_FALSE"
)

func xrStatus(rsp *fnv1.RunFunctionResponse) map[string]any {
	s, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	return s
}

// statusOnly keeps what a person sees of a response: the XR's status, the
// readiness of each composed resource, conditions, results and requirements.
func statusOnly(rsp *fnv1.RunFunctionResponse) *fnv1.RunFunctionResponse {
	out := &fnv1.RunFunctionResponse{
		Meta:         rsp.GetMeta(),
		Conditions:   rsp.GetConditions(),
		Results:      rsp.GetResults(),
		Requirements: rsp.GetRequirements(),
		Desired:      &fnv1.State{Composite: rsp.GetDesired().GetComposite(), Resources: map[string]*fnv1.Resource{}},
	}
	for k, r := range rsp.GetDesired().GetResources() {
		out.Desired.Resources[k] = &fnv1.Resource{Ready: r.GetReady()}
	}
	return out
}

// TestObservedExamples renders the seed stack (applied without a namespace,
// so in "default") against each fixture of example/observed, which are also
// inputs of `crossplane render --observed-resources --required-resources`,
// and compares the status, readiness and conditions with golden files.
func TestObservedExamples(t *testing.T) {
	for _, name := range []string{"downloading", "ready", "gpu-pending"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("..", "example", "observed", name)
			r, observed := observedExample(t, name)
			for k, items := range r.GetRequiredResources() {
				if len(items.GetItems()) == 0 {
					t.Errorf("no pod of %s matches requirement %s", dir, k)
				}
			}
			rsp := mustRun(t, r)
			for k := range observed {
				if _, ok := rsp.GetDesired().GetResources()[k]; !ok {
					t.Errorf("%s: observed resource %q is not a resource the function composes", dir, k)
				}
			}
			goldenCompare(t, "observed-"+name, statusOnly(rsp))
		})
	}
}

// TestStatusIntoDesiredXR: the status fields join what an earlier step of
// the pipeline wrote into the desired XR's status; a status that is no
// object is refused with the path, the same on every call.
func TestStatusIntoDesiredXR(t *testing.T) {
	withDesired := func(status any) *fnv1.RunFunctionRequest {
		r := req(t, minimalXR(), nil, nil)
		r.Desired = &fnv1.State{Composite: &fnv1.Resource{Resource: toStruct(t, map[string]any{
			"apiVersion": "serving.vllm.ai/v1alpha1", "kind": "ProductionStack", "status": status})}}
		return r
	}
	st := mustRun(t, withDesired(map[string]any{"earlier": "kept"})).GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
	if st["earlier"] != "kept" || st["readyModels"] != "0/1" {
		t.Errorf("desired status = %v, want the earlier step's field and the stack's", st)
	}
	const want = "cannot write the ProductionStack's status: cannot set status.endpoint: "
	for range 5 {
		if got := fatal(t, run(t, withDesired("not an object"))); !strings.HasPrefix(got, want) {
			t.Fatalf("Fatal message %q, want it to start with %q", got, want)
		}
	}
}
