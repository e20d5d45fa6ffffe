package status

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// FuzzPodIssues: whatever pods a cluster sends, their issues come out the
// same twice, in at most maxPodIssues lines and a line for the rest, each
// within its bound, with a reason from the severity list.
func FuzzPodIssues(f *testing.F) {
	f.Add([]byte(`{"metadata":{"name":"p"},"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","message":"0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]}}`), 3)
	f.Add([]byte(`{"metadata":{"name":"q"},"status":{"phase":"Running","containerStatuses":[{"name":"vllm","state":{"waiting":{"reason":"CrashLoopBackOff"}},"lastState":{"terminated":{"reason":"OOMKilled","exitCode":137}}}]}}`), 1)
	f.Add([]byte(`{"metadata":{"name":"r","deletionTimestamp":"2026-01-01T00:00:00Z"},"status":{"phase":"Failed","reason":"Evicted"}}`), 9)
	f.Add([]byte(`{"status":{"phase":"Running","containerStatuses":[{"name":"`+strings.Repeat("x", 600)+`","state":{"terminated":{"exitCode":1}}}]}}`), 5)
	f.Fuzz(func(t *testing.T, pod []byte, copies int) {
		var m map[string]any
		if json.Unmarshal(pod, &m) != nil {
			return
		}
		var p corev1.Pod
		if runtime.DefaultUnstructuredConverter.FromUnstructured(m, &p) != nil {
			return
		}
		copies = 1 + max(0, copies)%12
		pods := func() []corev1.Pod {
			ps := make([]corev1.Pod, 0, copies)
			for i := range copies {
				q := *p.DeepCopy()
				q.Name += strings.Repeat("-", i%3) // some share a name
				ps = append(ps, q)
			}
			return ps
		}
		r1, l1 := podIssues(explaining(pods))
		r2, l2 := podIssues(explaining(pods))
		if r1 != r2 || strings.Join(l1, "\n") != strings.Join(l2, "\n") {
			t.Fatalf("two readings of the same pods differ")
		}
		if len(l1) > maxPodIssues+1 {
			t.Errorf("%d pod issue lines", len(l1))
		}
		if len(l1) > 0 && worst(r1) != r1 {
			t.Errorf("reason %q is not one of the condition reasons", r1)
		}
		for _, l := range l1 {
			if len(l) > len("pods  and 99 more: ")+maxPodsNamed*(maxPodNameLength*4+2)+maxDetailLength*4 {
				t.Errorf("a pod issue line of %d bytes", len(l))
			}
		}
	})
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
	notReady := stacktest.ObservedDeployment("s-m-deployment-vllm", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable)
	cases := map[string]struct {
		replicas int32
		pods     []corev1.Pod
		want     cond
	}{
		"Unschedulable": {
			pods: []corev1.Pod{stacktest.UnschedulablePod(p1)},
			want: cond{condFalse, "Unschedulable", prefix + "pod " + p1 + ": unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod"},
		},
		"ImagePullBackOff": {
			pods: []corev1.Pod{stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Waiting("ImagePullBackOff", `Back-off pulling image "docker.io/vllm/vllm-openai:v0.8.3"`)))},
			want: cond{condFalse, "ImagePullError", prefix + "pod " + p1 + `: container vllm cannot pull image docker.io/vllm/vllm-openai:v0.8.3: ImagePullBackOff: Back-off pulling image "docker.io/vllm/vllm-openai:v0.8.3"`},
		},
		"ErrImagePull": {
			pods: []corev1.Pod{stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Waiting("ErrImagePull", `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/vllm/vllm-openai:v0.8.3": not found`)))},
			want: cond{condFalse, "ImagePullError", prefix + "pod " + p1 + `: container vllm cannot pull image docker.io/vllm/vllm-openai:v0.8.3: ErrImagePull: rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/vllm/vllm-openai:v0.8.3": not found`},
		},
		"CrashLoopBackOffOOMKilled": {
			pods: []corev1.Pod{stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Restarted(stacktest.Waiting("CrashLoopBackOff", "back-off 2m40s restarting failed container=vllm pod="+p1), "OOMKilled", 137)))},
			want: cond{condFalse, "CrashLoopBackOff", prefix + "pod " + p1 + ": container vllm keeps crashing, last exit: OOMKilled (exit code 137): raise resources.memory"},
		},
		"CrashLoopBackOffError": {
			pods: []corev1.Pod{stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Restarted(stacktest.Waiting("CrashLoopBackOff", "back-off 20s restarting failed container=vllm pod="+p1), "Error", 1)))},
			want: cond{condFalse, "CrashLoopBackOff", prefix + "pod " + p1 + ": container vllm keeps crashing, last exit: Error (exit code 1)"},
		},
		"Terminated": {
			pods: []corev1.Pod{stacktest.ModelPod(p1, stacktest.Scheduled(corev1.ContainerStatus{Name: "vllm", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}))},
			want: cond{condFalse, "CrashLoopBackOff", prefix + "pod " + p1 + ": container vllm terminated: OOMKilled (exit code 137): raise resources.memory"},
		},
		"MissingSecret": {
			pods: []corev1.Pod{stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Waiting("CreateContainerConfigError", `secret "huggingface-token" not found`)))},
			want: cond{condFalse, "ContainerConfigError", prefix + "pod " + p1 + `: container vllm cannot start: CreateContainerConfigError: secret "huggingface-token" not found`},
		},
		"StartupProbeNotPassed": {
			pods: []corev1.Pod{stacktest.StartingPod(p1)},
			want: cond{condFalse, "Starting", prefix + "pod " + p1 + ": container vllm has not passed its startup probe yet (downloading or loading the model)"},
		},
		"StartingAgainAfterOOM": {
			pods: []corev1.Pod{stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Restarted(stacktest.Running(false, false), "OOMKilled", 137)))},
			want: cond{condFalse, "Starting", prefix + "pod " + p1 + ": container vllm has not passed its startup probe yet (downloading or loading the model), last exit: OOMKilled (exit code 137): raise resources.memory"},
		},
		"ReadinessProbeFails": {
			pods: []corev1.Pod{stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Running(true, false)))},
			want: cond{condFalse, "NotReady", prefix + "pod " + p1 + ": container vllm is running but fails its readiness probe"},
		},
		"ContainerCreating": {
			pods: []corev1.Pod{stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Waiting("ContainerCreating", "")))},
			want: cond{condFalse, "ContainerWaiting", prefix + "pod " + p1 + ": container vllm is waiting: ContainerCreating"},
		},
		"ScheduledNoStatusYet": {
			pods: []corev1.Pod{stacktest.ModelPod(p1, corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}})},
			want: cond{condFalse, "PodPending", prefix + "pod " + p1 + ": not ready yet: Pending"},
		},
		"Evicted": {
			pods: []corev1.Pod{stacktest.ModelPod(p1, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 2Gi."})},
			want: cond{condFalse, "PodFailed", prefix + "pod " + p1 + ": failed: Evicted: The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 2Gi"},
		},
		"ReadyPodsAreNotReported": {
			pods: []corev1.Pod{stacktest.ReadyPod(p2), stacktest.StartingPod(p1)},
			want: cond{condFalse, "Starting", prefix + "pod " + p1 + ": container vllm has not passed its startup probe yet (downloading or loading the model)"},
		},
		"TerminatingPodsAreNotReported": {
			pods: []corev1.Pod{func() corev1.Pod {
				p := stacktest.UnschedulablePod(p1)
				p.DeletionTimestamp = &metav1.Time{Time: time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC)}
				return p
			}()},
			want: cond{condFalse, "Unavailable", "0/1 models ready. m: 0/1 replicas available"},
		},
		"CompletedPodsAreNotReported": {
			pods: []corev1.Pod{stacktest.ModelPod(p1, corev1.PodStatus{Phase: corev1.PodSucceeded})},
			want: cond{condFalse, "Unavailable", "0/1 models ready. m: 0/1 replicas available"},
		},
		"OtherModelsPodsAreNotReported": {
			pods: []corev1.Pod{stacktest.TestPod(p1, "serving-engine", "other", stacktest.Scheduled(stacktest.Running(false, false)))},
			want: cond{condFalse, "Unavailable", "0/1 models ready. m: 0/1 replicas available"},
		},
		"MostSevereReasonWins": {
			replicas: 2,
			pods:     []corev1.Pod{stacktest.StartingPod(p1), stacktest.UnschedulablePod(p2)},
			want: cond{condFalse, "Unschedulable", prefix2 +
				"pod " + p2 + ": unschedulable: 0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod; " +
				"pod " + p1 + ": container vllm has not passed its startup probe yet (downloading or loading the model)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr, observed := minimalXR(), stacktest.ObservedWith("engine-m", notReady)
			if tc.replicas > 0 {
				xr = with("replicas", int64(tc.replicas))
				observed = stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", tc.replicas, stacktest.Counts(tc.replicas, 0, 0), stacktest.Unavailable))
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
		stacktest.UnschedulablePod(pod("a")), stacktest.UnschedulablePod(pod("b")), stacktest.UnschedulablePod(pod("c")), stacktest.UnschedulablePod(pod("d")),
		stacktest.ModelPod(pod("e"), stacktest.Scheduled(stacktest.Waiting("CreateContainerConfigError", long))),
		stacktest.StartingPod(pod("f")),
		stacktest.ModelPod(pod("g"), stacktest.Scheduled(stacktest.Running(true, false))),
		stacktest.ModelPod(pod("h"), stacktest.Scheduled(stacktest.Waiting("ImagePullBackOff", ""))),
	}
	xr := with("replicas", int64(8))
	observed := stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 8, stacktest.Counts(8, 0, 0), stacktest.Unavailable))
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
		stacktest.StartingPod("s-m-deployment-vllm-5d8f7b9c6d-b"),
		stacktest.UnschedulablePod("s-m-deployment-vllm-5d8f7b9c6d-c"),
		stacktest.ModelPod("s-m-deployment-vllm-5d8f7b9c6d-a", stacktest.Scheduled(stacktest.Waiting("ContainerCreating", ""))),
		stacktest.StartingPod("s-m-deployment-vllm-5d8f7b9c6d-d"),
	}
	xr := with("replicas", int64(4))
	observed := stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 4, stacktest.Counts(4, 0, 0), stacktest.Unavailable))
	first := mustRun(t, withPods(t, req(t, xr, nil, observed), pods...))
	// Every rotation of the pods and of their reverse.
	for range 2 {
		slices.Reverse(pods)
		for range len(pods) {
			pods = append(pods[1:], pods[0])
			again := mustRun(t, withPods(t, req(t, xr, nil, observed), pods...))
			if diff := cmp.Diff(first, again, cmp.AllowUnexported(response{})); diff != "" {
				t.Fatalf("pod order changed the response (-first +again):\n%s", diff)
			}
		}
	}
}

// TestNoPodsYet: on the first call of a reconcile Crossplane has not sent
// pods; the status then says only what the Deployment says.
func TestNoPodsYet(t *testing.T) {
	observed := stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable))
	rsp := mustRun(t, req(t, minimalXR(), nil, observed))
	want := cond{condFalse, "Unavailable", "0/1 models ready. m: 0/1 replicas available"}
	if diff := cmp.Diff(want, conditionOfType(t, rsp, conditionEnginesReady)); diff != "" {
		t.Errorf("EnginesReady (-want +got):\n%s", diff)
	}
}

// TestPodsOfReadyModelsAreIgnored: an old pod that lingers (e.g. evicted)
// does not make a serving model look broken.
func TestPodsOfReadyModelsAreIgnored(t *testing.T) {
	evicted := stacktest.ModelPod("s-m-deployment-vllm-5d8f7b9c6d-old", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"})
	rsp := mustRun(t, withPods(t, req(t, minimalXR(), nil, stacktest.ObservedReady()), evicted))
	want := cond{condTrue, "Available", "1/1 models ready"}
	if diff := cmp.Diff(want, conditionOfType(t, rsp, conditionEnginesReady)); diff != "" {
		t.Errorf("EnginesReady (-want +got):\n%s", diff)
	}
}

// TestRouterPods: RouterReady explains router pods the same way.
func TestRouterPods(t *testing.T) {
	const p = "s-deployment-router-6c9d8f7b5-q4m8z"
	routerPod := stacktest.TestPod(p, "router", "router", stacktest.Scheduled(corev1.ContainerStatus{
		Name: "router-container", Image: "lmcache/lmstack-router:v9", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ErrImagePull", Message: `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/lmcache/lmstack-router:v9": not found`,
		}},
	}))
	// An engine pod with an issue does not leak into RouterReady.
	observed := stacktest.ObservedWith("router", stacktest.ObservedDeployment("s-deployment-router", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable))
	rsp := mustRun(t, withPods(t, req(t, minimalXR(), nil, observed), routerPod, stacktest.UnschedulablePod("s-m-deployment-vllm-5d8f7b9c6d-x7k2p")))
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
	observed := map[string]map[string]any{"engine-" + strings.TrimSuffix(name, "-"): stacktest.ObservedDeployment("d", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable)}
	rsp := mustRun(t, withPods(t, req(t, xr, nil, observed), stacktest.TestPod("p", "serving-engine", id, stacktest.Scheduled(stacktest.Running(false, false)))))
	got := conditionOfType(t, rsp, conditionEnginesReady).Message
	if !strings.HasSuffix(got, "; pod p: container vllm has not passed its startup probe yet (downloading or loading the model)") {
		t.Errorf("EnginesReady does not report the pod of a model with a long name: %s", got)
	}
}
