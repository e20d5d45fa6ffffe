package fn

import (
	"testing"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	appsv1 "k8s.io/api/apps/v1"
)

// TestMultiModelRendersEachModel: the multi-model example renders one engine
// per model with merged settings, behind one router.
func TestMultiModelRendersEachModel(t *testing.T) {
	rsp := reconciled(t, stacktest.LoadXR(t, "../example/stacks/multi-model.yaml", ""), nil)
	llama := desired(t, rsp, "engine-llama3", &appsv1.Deployment{})
	mistral := desired(t, rsp, "engine-mistral-7b", &appsv1.Deployment{})
	if *llama.Spec.Replicas != 2 || *mistral.Spec.Replicas != 1 {
		t.Errorf("replicas: llama3 %d (set 2), mistral %d (default 1)", *llama.Spec.Replicas, *mistral.Spec.Replicas)
	}
	if got := mistral.Spec.Template.Spec.Containers[0].Env; got[len(got)-1].Value != "DEBUG" || len(got) != 4 {
		t.Errorf("mistral's env must override VLLM_LOG_LEVEL in place: %v", got)
	}
	if n := len(rsp.GetDesired().GetResources()); n != 11 {
		t.Errorf("got %d resources, want 2x(Deployment, Service, PVC) + 5 router objects: %v", n, keys(rsp))
	}
}

func ptrTo[T any](v T) *T { return &v }
