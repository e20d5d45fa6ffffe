package fn

import (
	"slices"

	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/wire"
	"github.com/vllm-project/function-vllm-stack/stack"
	"github.com/vllm-project/function-vllm-stack/status"
)

// Pods are not composed resources, and a Deployment's status only counts
// replicas. To say *why* an engine does not serve (no GPU free, image not
// found, out of memory, missing Secret, still loading the model) the function
// asks Crossplane for the stack's pods as required resources.
const (
	enginePodsRequirement       = "engine-pods"
	engineWorkerPodsRequirement = "engine-worker-pods"
	routerPodsRequirement       = "router-pods"
)

// requirePods asks Crossplane for the stack's engine and router pods, by the
// labels of SPEC §2, in the stack's namespace. compose asks only while
// status.NeedsPods: a serving stack's status comes from its workloads. The
// requirements are the same on every call of a reconcile (the workloads are
// observed once per reconcile), so Crossplane's requirement loop settles
// after one round.
func requirePods(rsp *fnv1.RunFunctionResponse, s *stack.Stack, parts stack.Parts) {
	require(rsp, enginePodsRequirement, podSelector(s, stack.ComponentEngine))
	if slices.ContainsFunc(parts.Engines, func(e stack.EnginePart) bool { return e.LeaderWorkerSet != "" }) {
		// A multi-node model's workers, which explain a group whose leader
		// waits for them.
		require(rsp, engineWorkerPodsRequirement, podSelector(s, stack.ComponentEngineWorker))
	}
	require(rsp, routerPodsRequirement, podSelector(s, stack.ComponentRouter))
}

// require asks Crossplane for the resources a selector matches, sent on the
// next call as required resource name.
func require(rsp *fnv1.RunFunctionResponse, name string, sel *fnv1.ResourceSelector) {
	if rsp.Requirements == nil {
		rsp.Requirements = &fnv1.Requirements{}
	}
	if rsp.Requirements.Resources == nil {
		rsp.Requirements.Resources = map[string]*fnv1.ResourceSelector{}
	}
	rsp.Requirements.Resources[name] = sel
}

func podSelector(s *stack.Stack, component string) *fnv1.ResourceSelector {
	return &fnv1.ResourceSelector{
		ApiVersion: "v1",
		Kind:       "Pod",
		Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{
			Labels: s.PodLabels(component),
		}},
		Namespace: ptr.To(s.Namespace()),
	}
}

// requiredPods are the stack's pods that Crossplane sent, decoded on demand.
// On the first call of a reconcile Crossplane has not fetched them yet: then
// there are none and the status says nothing about pods.
func requiredPods(req *fnv1.RunFunctionRequest) status.StackPods {
	engines := map[string]podSet{}
	for _, p := range onlyPods(append(requiredResources(req, enginePodsRequirement), requiredResources(req, engineWorkerPodsRequirement)...)) {
		name := p.GetFields()["metadata"].GetStructValue().GetFields()["labels"].GetStructValue().GetFields()[stack.LabelName].GetStringValue()
		engines[name] = append(engines[name], p)
	}
	sp := status.StackPods{Engines: make(map[string]status.Pods, len(engines)), Router: onlyPods(requiredResources(req, routerPodsRequirement)).decode}
	for name, ps := range engines {
		sp.Engines[name] = ps.decode
	}
	return sp
}

// A podSet is pods as Crossplane sent them. They are decoded only to explain
// a Deployment that is not ready: in a serving stack, never.
type podSet []*structpb.Struct

// onlyPods drops what says it is not a v1 Pod: Crossplane sends what the
// selector asked for, and a broken cluster may send anything.
func onlyPods(rs []*structpb.Struct) podSet {
	pods := make(podSet, 0, len(rs))
	for _, r := range rs {
		av, kind := r.GetFields()["apiVersion"].GetStringValue(), r.GetFields()["kind"].GetStringValue()
		if (av == "" || av == "v1") && (kind == "" || kind == "Pod") {
			pods = append(pods, r)
		}
	}
	return pods
}

// decode decodes the pods. A pod that does not decode is skipped: pods only
// explain the status, and must never stop the stack from being composed.
func (ps podSet) decode() []corev1.Pod {
	pods := make([]corev1.Pod, 0, len(ps))
	for _, r := range ps {
		p := corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(wire.DecodeFields(r, wire.PodFields), &p); err != nil {
			continue
		}
		pods = append(pods, p)
	}
	return pods
}
