package fn

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
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
	again := mustRun(t, withPods(t, req(t, minimalXR(), nil, nil), startingPod("s-m-deployment-vllm-5d8f7b9c6d-x7k2p")))
	if !proto.Equal(rsp.GetRequirements(), again.GetRequirements()) {
		t.Errorf("requirements changed once pods were sent: Crossplane would never settle")
	}
}

// Pods of minimalXR's model "m" and its router.

func testPod(name, component, app string, status corev1.PodStatus) corev1.Pod {
	return corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "llm", Labels: map[string]string{
			labelName: app, labelInstance: "s", labelComponent: component, labelPartOf: "vllm-stack", labelManagedBy: "crossplane",
		}},
		Status: status,
	}
}

func modelPod(name string, status corev1.PodStatus) corev1.Pod {
	return testPod(name, componentEngine, "m", status)
}

// scheduled is a pod placed on a node and running containers, not ready.
func scheduled(containers ...corev1.ContainerStatus) corev1.PodStatus {
	return corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
			{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [vllm]"},
		},
		ContainerStatuses: containers,
	}
}

const engineImage = "docker.io/vllm/vllm-openai:v0.8.3"

func waiting(reason, message string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "vllm", Image: engineImage, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
}

func running(started, ready bool) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: "vllm", Image: engineImage, Started: &started, Ready: ready,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
}

// restarted adds the last termination of a container.
func restarted(cs corev1.ContainerStatus, reason string, code int32) corev1.ContainerStatus {
	cs.RestartCount = 4
	cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: reason, ExitCode: code}
	return cs
}

func readyPod(name string) corev1.Pod {
	st := scheduled(running(true, true))
	st.Conditions[1] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	return modelPod(name, st)
}

func startingPod(name string) corev1.Pod { return modelPod(name, scheduled(running(false, false))) }

func unschedulablePod(name string) corev1.Pod {
	return modelPod(name, corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
		Message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.",
	}}})
}

// withPods adds pods to a request as Crossplane does: it runs the function,
// then sends under each requirement the pods its selector matches.
func withPods(t *testing.T, r *fnv1.RunFunctionRequest, pods ...corev1.Pod) *fnv1.RunFunctionRequest {
	t.Helper()
	r.RequiredResources = map[string]*fnv1.Resources{}
	for name, sel := range mustRun(t, r).GetRequirements().GetResources() {
		items := []*fnv1.Resource{}
		for _, p := range pods {
			if p.Namespace == sel.GetNamespace() && k8slabels.SelectorFromSet(sel.GetMatchLabels().GetLabels()).Matches(k8slabels.Set(p.Labels)) {
				items = append(items, &fnv1.Resource{Resource: toStruct(t, toMap(&p))})
			}
		}
		r.RequiredResources[name] = &fnv1.Resources{Items: items}
	}
	return r
}

// TestPodIssues covers each way a pod keeps a model from serving, with the
// exact reason and message of EnginesReady.
func TestPodIssues(t *testing.T) {
	const (
		p1      = "s-m-deployment-vllm-5d8f7b9c6d-x7k2p"
		p2      = "s-m-deployment-vllm-5d8f7b9c6d-b4n9q"
		prefix  = "0/1 models ready. m: 0/1 replicas available; "
		prefix2 = "0/1 models ready. m: 0/2 replicas available; "
	)
	notReady := observedDeployment("s-m-deployment-vllm", 1, counts(1, 0, 0), unavailable)
	cases := map[string]struct {
		replicas int32
		pods     []corev1.Pod
		want     cond
	}{
		"Unschedulable": {
			pods: []corev1.Pod{unschedulablePod(p1)},
			want: cond{condFalse, "Unschedulable", prefix + "pod " + p1 + ": unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod"},
		},
		"ImagePullBackOff": {
			pods: []corev1.Pod{modelPod(p1, scheduled(waiting("ImagePullBackOff", `Back-off pulling image "docker.io/vllm/vllm-openai:v0.8.3"`)))},
			want: cond{condFalse, "ImagePullError", prefix + "pod " + p1 + `: container vllm cannot pull image docker.io/vllm/vllm-openai:v0.8.3: ImagePullBackOff: Back-off pulling image "docker.io/vllm/vllm-openai:v0.8.3"`},
		},
		"ErrImagePull": {
			pods: []corev1.Pod{modelPod(p1, scheduled(waiting("ErrImagePull", `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/vllm/vllm-openai:v0.8.3": not found`)))},
			want: cond{condFalse, "ImagePullError", prefix + "pod " + p1 + `: container vllm cannot pull image docker.io/vllm/vllm-openai:v0.8.3: ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/vllm/vllm-openai:v0.8.3": not found`},
		},
		"CrashLoopBackOffOOMKilled": {
			pods: []corev1.Pod{modelPod(p1, scheduled(restarted(waiting("CrashLoopBackOff", "back-off 2m40s restarting failed container=vllm pod="+p1), "OOMKilled", 137)))},
			want: cond{condFalse, "CrashLoopBackOff", prefix + "pod " + p1 + ": container vllm keeps crashing, last exit: OOMKilled (exit code 137): raise resources.memory"},
		},
		"CrashLoopBackOffError": {
			pods: []corev1.Pod{modelPod(p1, scheduled(restarted(waiting("CrashLoopBackOff", "back-off 20s restarting failed container=vllm pod="+p1), "Error", 1)))},
			want: cond{condFalse, "CrashLoopBackOff", prefix + "pod " + p1 + ": container vllm keeps crashing, last exit: Error (exit code 1)"},
		},
		"Terminated": {
			pods: []corev1.Pod{modelPod(p1, scheduled(corev1.ContainerStatus{Name: "vllm", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}))},
			want: cond{condFalse, "CrashLoopBackOff", prefix + "pod " + p1 + ": container vllm terminated: OOMKilled (exit code 137): raise resources.memory"},
		},
		"MissingSecret": {
			pods: []corev1.Pod{modelPod(p1, scheduled(waiting("CreateContainerConfigError", `secret "huggingface-token" not found`)))},
			want: cond{condFalse, "ContainerConfigError", prefix + "pod " + p1 + `: container vllm cannot start: CreateContainerConfigError: secret "huggingface-token" not found`},
		},
		"StartupProbeNotPassed": {
			pods: []corev1.Pod{startingPod(p1)},
			want: cond{condFalse, "Starting", prefix + "pod " + p1 + ": container vllm has not passed its startup probe yet (downloading or loading the model)"},
		},
		"StartingAgainAfterOOM": {
			pods: []corev1.Pod{modelPod(p1, scheduled(restarted(running(false, false), "OOMKilled", 137)))},
			want: cond{condFalse, "Starting", prefix + "pod " + p1 + ": container vllm has not passed its startup probe yet (downloading or loading the model), last exit: OOMKilled (exit code 137): raise resources.memory"},
		},
		"ReadinessProbeFails": {
			pods: []corev1.Pod{modelPod(p1, scheduled(running(true, false)))},
			want: cond{condFalse, "NotReady", prefix + "pod " + p1 + ": container vllm is running but fails its readiness probe"},
		},
		"ContainerCreating": {
			pods: []corev1.Pod{modelPod(p1, scheduled(waiting("ContainerCreating", "")))},
			want: cond{condFalse, "ContainerWaiting", prefix + "pod " + p1 + ": container vllm is waiting: ContainerCreating"},
		},
		"ScheduledNoStatusYet": {
			pods: []corev1.Pod{modelPod(p1, corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}})},
			want: cond{condFalse, "PodPending", prefix + "pod " + p1 + ": not ready yet: Pending"},
		},
		"Evicted": {
			pods: []corev1.Pod{modelPod(p1, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 2Gi."})},
			want: cond{condFalse, "PodFailed", prefix + "pod " + p1 + ": failed: Evicted: The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 2Gi"},
		},
		"ReadyPodsAreNotReported": {
			pods: []corev1.Pod{readyPod(p2), startingPod(p1)},
			want: cond{condFalse, "Starting", prefix + "pod " + p1 + ": container vllm has not passed its startup probe yet (downloading or loading the model)"},
		},
		"TerminatingPodsAreNotReported": {
			pods: []corev1.Pod{func() corev1.Pod {
				p := unschedulablePod(p1)
				p.DeletionTimestamp = &metav1.Time{Time: time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC)}
				return p
			}()},
			want: cond{condFalse, "Unavailable", "0/1 models ready. m: 0/1 replicas available"},
		},
		"CompletedPodsAreNotReported": {
			pods: []corev1.Pod{modelPod(p1, corev1.PodStatus{Phase: corev1.PodSucceeded})},
			want: cond{condFalse, "Unavailable", "0/1 models ready. m: 0/1 replicas available"},
		},
		"OtherModelsPodsAreNotReported": {
			pods: []corev1.Pod{testPod(p1, componentEngine, "other", scheduled(running(false, false)))},
			want: cond{condFalse, "Unavailable", "0/1 models ready. m: 0/1 replicas available"},
		},
		"MostSevereReasonWins": {
			replicas: 2,
			pods:     []corev1.Pod{startingPod(p1), unschedulablePod(p2)},
			want: cond{condFalse, "Unschedulable", prefix2 +
				"pod " + p2 + ": unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod; " +
				"pod " + p1 + ": container vllm has not passed its startup probe yet (downloading or loading the model)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr, observed := minimalXR(), observedWith("engine-m", notReady)
			if tc.replicas > 0 {
				xr = with("replicas", int64(tc.replicas))
				observed = observedWith("engine-m", observedDeployment("s-m-deployment-vllm", tc.replicas, counts(tc.replicas, 0, 0), unavailable))
			}
			rsp := mustRun(t, withPods(t, req(t, xr, nil, observed), tc.pods...))
			if diff := cmp.Diff(tc.want, conditionOfType(t, rsp, conditionEnginesReady)); diff != "" {
				t.Errorf("EnginesReady (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodIssuesBounded: however many pods a model has, its message names at
// most three distinct issues and two pods per issue, each issue truncated.
func TestPodIssuesBounded(t *testing.T) {
	pod := func(n string) string { return "s-m-deployment-vllm-5d8f7b9c6d-" + n }
	long := strings.Repeat("x", 400)
	pods := []corev1.Pod{
		unschedulablePod(pod("a")), unschedulablePod(pod("b")), unschedulablePod(pod("c")), unschedulablePod(pod("d")),
		modelPod(pod("e"), scheduled(waiting("CreateContainerConfigError", long))),
		startingPod(pod("f")),
		modelPod(pod("g"), scheduled(running(true, false))),
		modelPod(pod("h"), scheduled(waiting("ImagePullBackOff", ""))),
	}
	xr := with("replicas", int64(8))
	observed := observedWith("engine-m", observedDeployment("s-m-deployment-vllm", 8, counts(8, 0, 0), unavailable))
	rsp := mustRun(t, withPods(t, req(t, xr, nil, observed), pods...))
	want := cond{condFalse, "Unschedulable", "0/1 models ready. m: 0/8 replicas available; " +
		"pods " + pod("a") + ", " + pod("b") + " and 2 more: unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod; " +
		"pod " + pod("h") + ": container vllm cannot pull image docker.io/vllm/vllm-openai:v0.8.3: ImagePullBackOff; " +
		"pod " + pod("e") + ": container vllm cannot start: CreateContainerConfigError: " + strings.Repeat("x", maxDetailLength-len("container vllm cannot start: CreateContainerConfigError: ")-3) + "...; " +
		"2 more pod issues"}
	if diff := cmp.Diff(want, conditionOfType(t, rsp, conditionEnginesReady)); diff != "" {
		t.Errorf("EnginesReady (-want +got):\n%s", diff)
	}
}

// TestPodOrderDoesNotMatter: pods arrive in any order; the response is the
// same, so the status never flaps between two reconciles of the same state.
func TestPodOrderDoesNotMatter(t *testing.T) {
	pods := []corev1.Pod{
		startingPod("s-m-deployment-vllm-5d8f7b9c6d-b"),
		unschedulablePod("s-m-deployment-vllm-5d8f7b9c6d-c"),
		modelPod("s-m-deployment-vllm-5d8f7b9c6d-a", scheduled(waiting("ContainerCreating", ""))),
		startingPod("s-m-deployment-vllm-5d8f7b9c6d-d"),
	}
	xr := with("replicas", int64(4))
	observed := observedWith("engine-m", observedDeployment("s-m-deployment-vllm", 4, counts(4, 0, 0), unavailable))
	first := mustRun(t, withPods(t, req(t, xr, nil, observed), pods...))
	// Every rotation of the pods and of their reverse.
	for range 2 {
		slices.Reverse(pods)
		for range len(pods) {
			pods = append(pods[1:], pods[0])
			again := mustRun(t, withPods(t, req(t, xr, nil, observed), pods...))
			if diff := cmp.Diff(first, again, protocmp.Transform()); diff != "" {
				t.Fatalf("pod order changed the response (-first +again):\n%s", diff)
			}
		}
	}
}

// TestNoPodsYet: on the first call of a reconcile Crossplane has not sent
// pods; the status then says only what the Deployment says.
func TestNoPodsYet(t *testing.T) {
	observed := observedWith("engine-m", observedDeployment("s-m-deployment-vllm", 1, counts(1, 0, 0), unavailable))
	rsp := mustRun(t, req(t, minimalXR(), nil, observed))
	want := cond{condFalse, "Unavailable", "0/1 models ready. m: 0/1 replicas available"}
	if diff := cmp.Diff(want, conditionOfType(t, rsp, conditionEnginesReady)); diff != "" {
		t.Errorf("EnginesReady (-want +got):\n%s", diff)
	}
}

// TestPodsOfReadyModelsAreIgnored: an old pod that lingers (e.g. evicted)
// does not make a serving model look broken.
func TestPodsOfReadyModelsAreIgnored(t *testing.T) {
	evicted := modelPod("s-m-deployment-vllm-5d8f7b9c6d-old", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"})
	rsp := mustRun(t, withPods(t, req(t, minimalXR(), nil, observedReady()), evicted))
	want := cond{condTrue, "Available", "1/1 models ready"}
	if diff := cmp.Diff(want, conditionOfType(t, rsp, conditionEnginesReady)); diff != "" {
		t.Errorf("EnginesReady (-want +got):\n%s", diff)
	}
}

// TestRouterPods: RouterReady explains router pods the same way.
func TestRouterPods(t *testing.T) {
	const p = "s-deployment-router-6c9d8f7b5-q4m8z"
	routerPod := testPod(p, componentRouter, "router", scheduled(corev1.ContainerStatus{
		Name: routerContainer, Image: "lmcache/lmstack-router:v9", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ErrImagePull", Message: `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/lmcache/lmstack-router:v9": not found`,
		}},
	}))
	// An engine pod with an issue does not leak into RouterReady.
	observed := observedWith("router", observedDeployment("s-deployment-router", 1, counts(1, 0, 0), unavailable))
	rsp := mustRun(t, withPods(t, req(t, minimalXR(), nil, observed), routerPod, unschedulablePod("s-m-deployment-vllm-5d8f7b9c6d-x7k2p")))
	want := cond{condFalse, "ImagePullError", "0/1 replicas available; pod " + p + `: container router-container cannot pull image lmcache/lmstack-router:v9: ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/lmcache/lmstack-router:v9": not found`}
	if diff := cmp.Diff(want, conditionOfType(t, rsp, conditionRouterReady)); diff != "" {
		t.Errorf("RouterReady (-want +got):\n%s", diff)
	}
}

// TestLongModelNameGroupsPods: pods carry the engine's id shortened to a
// label value; a model with a long name still finds its pods.
func TestLongModelNameGroupsPods(t *testing.T) {
	name := strings.Repeat("very-long-model-name-", 4)                      // 84 characters
	id := "very-long-model-name-very-long-model-name-very-long-mo-662910fa" // its DNS label, shortened to 63 characters
	xr := with("model.name", name)
	observed := map[string]map[string]any{"engine-" + strings.TrimSuffix(name, "-"): observedDeployment("d", 1, counts(1, 0, 0), unavailable)}
	rsp := mustRun(t, withPods(t, req(t, xr, nil, observed), testPod("p", componentEngine, id, scheduled(running(false, false)))))
	got := conditionOfType(t, rsp, conditionEnginesReady).Message
	if !strings.HasSuffix(got, "; pod p: container vllm has not passed its startup probe yet (downloading or loading the model)") {
		t.Errorf("EnginesReady does not report the pod of a model with a long name: %s", got)
	}
}
