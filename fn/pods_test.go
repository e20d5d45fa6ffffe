package fn

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// TestRequirements: the function asks for the stack's engine and router pods
// by the labels of SPEC §2, in the stack's namespace.
func TestRequirements(t *testing.T) {
	selector := func(component string) *fnv1.ResourceSelector {
		return &fnv1.ResourceSelector{
			ApiVersion: "v1", Kind: "Pod", Namespace: ptr.To("llm"),
			Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{
				"app.kubernetes.io/instance": "s", "app.kubernetes.io/component": component,
			}}},
		}
	}
	want := &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{
		"engine-pods": selector("serving-engine"),
		"router-pods": selector("router"),
	}}
	rsp := mustRun(t, req(t, minimalXR(), nil, nil))
	if diff := cmp.Diff(want, rsp.GetRequirements(), protocmp.Transform()); diff != "" {
		t.Errorf("requirements (-want +got):\n%s", diff)
	}
	// Crossplane calls again with the pods until the requirements settle.
	again := mustRun(t, withPods(t, req(t, minimalXR(), nil, nil), stacktest.StartingPod("s-m-deployment-vllm-5d8f7b9c6d-x7k2p")))
	if !proto.Equal(rsp.GetRequirements(), again.GetRequirements()) {
		t.Errorf("requirements changed once pods were sent: Crossplane would never settle")
	}
}

// Pods of minimalXR's model "m" and its router.

// withPods adds pods to a request as Crossplane does: it runs the function,
// then sends under each requirement the pods its selector matches.
func withPods(t *testing.T, r *fnv1.RunFunctionRequest, pods ...corev1.Pod) *fnv1.RunFunctionRequest {
	t.Helper()
	r.RequiredResources = map[string]*fnv1.Resources{}
	for name, sel := range mustRun(t, r).GetRequirements().GetResources() {
		items := []*fnv1.Resource{}
		for _, p := range pods {
			if p.Namespace == sel.GetNamespace() && k8slabels.SelectorFromSet(sel.GetMatchLabels().GetLabels()).Matches(k8slabels.Set(p.Labels)) {
				items = append(items, &fnv1.Resource{Resource: toStruct(t, stacktest.ToMap(&p))})
			}
		}
		r.RequiredResources[name] = &fnv1.Resources{Items: items}
	}
	return r
}
