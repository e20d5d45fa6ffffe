package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// TestNeedsPods: when NeedsPods says no, the pods change nothing Observe
// says; when a workload is not ready, it says yes.
func TestNeedsPods(t *testing.T) {
	s := stack.New(stack.Identity{Name: "s", Namespace: "llm"}, mustSpec(t), nil)
	// Pods that would say something about every workload, were they read.
	pods := []corev1.Pod{
		stacktest.UnschedulablePod("s-m-deployment-vllm-5d8f7b9c6d-x7k2p"),
		stacktest.TestPod("s-deployment-router-1", "router", "router", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}),
	}
	notReady := stacktest.ObservedDeployment("s-m-deployment-vllm", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable)
	for name, tc := range map[string]struct {
		observed map[string]map[string]any
		want     bool
	}{
		"serving":             {stacktest.ObservedReady(), false},
		"claim pending":       {stacktest.ObservedWith("engine-m-storage", stacktest.ObservedClaim("s-m-storage-claim", "Pending")), false},
		"engine unready":      {stacktest.ObservedWith("engine-m", notReady), true},
		"engine not observed": {stacktest.ObservedWith("engine-m", nil), true},
		"router unready":      {stacktest.ObservedWith("router", stacktest.ObservedDeployment("s-deployment-router", 1, stacktest.Unavailable)), true},
		"router Service gone": {stacktest.ObservedWith("router-service", nil), true},
		"nothing observed":    {map[string]map[string]any{}, true},
	} {
		t.Run(name, func(t *testing.T) {
			observed := Observed{}
			for k, o := range tc.observed {
				observed[k] = &unstructured.Unstructured{Object: asJSON[map[string]any](t, o)}
			}
			without := Observe(s.Parts(), observed, StackPods{})
			if got := NeedsPods(s.Parts(), without); got != tc.want {
				t.Errorf("NeedsPods = %v, want %v", got, tc.want)
			}
			with := Observe(s.Parts(), observed, podsOf(pods, s))
			if got := NeedsPods(s.Parts(), with); got != tc.want {
				t.Errorf("NeedsPods with the pods = %v, want %v: Crossplane would not settle", got, tc.want)
			}
			if !tc.want {
				if diff := cmp.Diff(without.Conditions(), with.Conditions()); diff != "" {
					t.Errorf("the pods changed the conditions though NeedsPods said no (-without +with):\n%s", diff)
				}
				if diff := cmp.Diff(without.Fields(), with.Fields()); diff != "" {
					t.Errorf("the pods changed the status though NeedsPods said no (-without +with):\n%s", diff)
				}
			}
		})
	}
}

func mustSpec(t *testing.T) *v1alpha1.ProductionStackSpec {
	t.Helper()
	m := stacktest.Read(t, minimalXR())
	spec, _, err := stack.DecodeSpec(m.Spec)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}
