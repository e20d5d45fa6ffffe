package fn

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// Observed state from a broken or hostile cluster: what test/fuzz
// (FuzzObserved) found, each pinned with the exact status it now gives.

// TestRepeatedDeploymentConditions: a Deployment whose status repeats a
// condition thousands of times made a RouterReady message of 90 kB; the
// first of each type counts.
func TestRepeatedDeploymentConditions(t *testing.T) {
	router := stacktest.ObservedDeployment("s-deployment-router", 1, stacktest.Counts(1, 1, 1), stacktest.Unavailable)
	conds := router["status"].(map[string]any)["conditions"].([]any)
	for range 3000 {
		conds = append(conds,
			map[string]any{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "quota exceeded"},
			map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded"})
	}
	router["status"].(map[string]any)["conditions"] = conds
	rsp := mustRun(t, req(t, minimalXR(), nil, stacktest.ObservedWith("router", router)))
	want := cond{condFalse, "ReplicaFailure", "1/1 replicas available, but the Deployment is not Available: MinimumReplicasUnavailable: Deployment does not have minimum availability: FailedCreate: quota exceeded: Deployment exceeded its progress deadline"}
	if diff := cmp.Diff(want, conditionOfType(t, rsp, conditionRouterReady)); diff != "" {
		t.Errorf("RouterReady (-want +got):\n%s", diff)
	}
}

// TestHugeObservedStrings: a pod name, a claim phase and a Deployment that
// does not decode, each far longer than any cluster writes, are clipped.
func TestHugeObservedStrings(t *testing.T) {
	long := strings.Repeat("x", 100000)
	observed := stacktest.ObservedWith(
		"engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable),
		"engine-m-storage", stacktest.ObservedClaim("s-m-storage-claim", long),
		"router", map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": long}, "status": map[string]any{"replicas": "many"}},
	)
	rsp := mustRun(t, withPods(t, req(t, minimalXR(), nil, observed), stacktest.UnschedulablePod(long)))
	for typ, want := range map[string]cond{
		conditionEnginesReady: {condFalse, "Unschedulable", "0/1 models ready. m: 0/1 replicas available; pod " + strings.Repeat("x", maxPodNameLength-3) + "...: unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod"},
		conditionRouterReady:  {condFalse, "Unavailable", `cannot decode observed Deployment "` + strings.Repeat("x", maxDetailLength-len(`cannot decode observed Deployment "`)-3) + "..."},
		conditionStorageReady: {condFalse, "ClaimPending", "storage claim s-m-storage-claim is " + strings.Repeat("x", maxPhaseLength-3) + "...: a claim binds once a volume is provisioned for it; with a WaitForFirstConsumer StorageClass, only after its engine pod is scheduled"},
	} {
		if diff := cmp.Diff(want, conditionOfType(t, rsp, typ)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", typ, diff)
		}
	}
}

// TestPodsOfOneName: pods the cluster sends under one name (the API server
// never would) gave a status that followed the order they came in.
func TestPodsOfOneName(t *testing.T) {
	const name = "s-m-deployment-vllm-5d8f7b9c6d-x7k2p"
	a := stacktest.UnschedulablePod(name)
	b := stacktest.UnschedulablePod(name)
	b.Status.Conditions[0].Message = "0/3 nodes are available: 3 node(s) had untolerated taint"
	xr := with("replicas", int64(2))
	observed := stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 2, stacktest.Counts(2, 0, 0), stacktest.Unavailable))
	first := mustRun(t, withPods(t, req(t, xr, nil, observed), a, b))
	again := mustRun(t, withPods(t, req(t, xr, nil, observed), b, a))
	if !proto.Equal(first, again) {
		t.Errorf("the order of two pods of one name changed the response:\n%v\n%v", conditionOfType(t, first, conditionEnginesReady), conditionOfType(t, again, conditionEnginesReady))
	}
}

// TestRequiredResourcesOfTheWrongKind: what a requirement returns that is
// not what it asked for says nothing: a ConfigMap among the engine pods is
// no unready pod, and a ConfigMap is not the CRD a stack needs.
func TestRequiredResourcesOfTheWrongKind(t *testing.T) {
	observed := stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable))
	r := req(t, minimalXR(), nil, observed)
	cm := &fnv1.Resource{Resource: toStruct(t, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
		"name": "cm", "labels": map[string]any{labelName: "m"}}})}
	r.RequiredResources = map[string]*fnv1.Resources{enginePodsRequirement: {Items: []*fnv1.Resource{cm}}}
	want := cond{condFalse, "Unavailable", "0/1 models ready. m: 0/1 replicas available"}
	if diff := cmp.Diff(want, conditionOfType(t, mustRun(t, r), conditionEnginesReady)); diff != "" {
		t.Errorf("EnginesReady (-want +got):\n%s", diff)
	}

	xr := onCluster(with("monitoring.serviceMonitor.enabled", true))
	r = req(t, xr, nil, nil)
	r.RequiredResources = map[string]*fnv1.Resources{"crd-servicemonitors.monitoring.coreos.com": {Items: []*fnv1.Resource{cm}}}
	const msg = "cannot compose the stack: monitoring.serviceMonitor needs the ServiceMonitor CRD servicemonitors.monitoring.coreos.com, which the cluster does not have: install the Prometheus Operator, or turn monitoring.serviceMonitor off"
	if got := fatal(t, run(t, r)); got != msg {
		t.Errorf("Fatal message:\n got: %s\nwant: %s", got, msg)
	}
}

// TestQuantityInPodStatus: the status reads no quantity of a pod; a
// container status with resources of 1e-17170000 took apimachinery five
// seconds a pod to decode.
func TestQuantityInPodStatus(t *testing.T) {
	p := stacktest.UnschedulablePod("s-m-deployment-vllm-5d8f7b9c6d-x7k2p")
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "vllm", Image: stacktest.EngineImage}}
	pod := stacktest.ToMap(&p)
	pod["status"].(map[string]any)["containerStatuses"].([]any)[0].(map[string]any)["allocatedResources"] = map[string]any{"cpu": "1e-17170000"}
	observed := stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable))
	r := withPods(t, req(t, minimalXR(), nil, observed))
	r.RequiredResources[enginePodsRequirement] = &fnv1.Resources{Items: []*fnv1.Resource{{Resource: toStruct(t, pod)}}}
	start := time.Now()
	rsp := mustRun(t, r)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the status took %v", d)
	}
	want := cond{condFalse, "Unschedulable", "0/1 models ready. m: 0/1 replicas available; pod s-m-deployment-vllm-5d8f7b9c6d-x7k2p: unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod"}
	if diff := cmp.Diff(want, conditionOfType(t, rsp, conditionEnginesReady)); diff != "" {
		t.Errorf("EnginesReady (-want +got):\n%s", diff)
	}
}
