package fn

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	"sigs.k8s.io/yaml"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// A cluster is what Crossplane fetches for the function's requirements: the
// pods it runs and the CRDs it has.
type cluster struct {
	pods []corev1.Pod
	crds []string
}

// everyCRD is a cluster with the CRD of every optional kind.
func everyCRD() []string {
	var crds []string
	for _, k := range optionalKinds {
		crds = append(crds, k.crd)
	}
	slices.Sort(crds)
	return crds
}

// fetch answers requirements as Crossplane's FetchingFunctionRunner does:
// the pods a selector matches, the CRD a name matches, nothing when nothing
// does.
func (c cluster) fetch(t *testing.T, rq *fnv1.Requirements) map[string]*fnv1.Resources {
	t.Helper()
	out := map[string]*fnv1.Resources{}
	for name, sel := range rq.GetResources() {
		items := []*fnv1.Resource{}
		switch sel.GetKind() {
		case "Pod":
			for _, p := range c.pods {
				if p.Namespace == sel.GetNamespace() && k8slabels.SelectorFromSet(sel.GetMatchLabels().GetLabels()).Matches(k8slabels.Set(p.Labels)) {
					items = append(items, &fnv1.Resource{Resource: toStruct(t, stacktest.ToMap(&p))})
				}
			}
		case "CustomResourceDefinition":
			if slices.Contains(c.crds, sel.GetMatchName()) {
				items = crdFound(t, sel.GetMatchName()).GetItems()
			}
		default:
			t.Fatalf("requirement %s of a kind the test cluster does not know: %s", name, sel.GetKind())
		}
		out[name] = &fnv1.Resources{Items: items}
	}
	return out
}

// reconcile is one reconcile of Crossplane's requirement loop (v2.3.4,
// internal/xfn/required_resources.go): call the function; while the
// requirements it returns differ from those it was given, fetch them and
// call again. It returns every response, the last one the reconcile's.
func reconcile(t *testing.T, c cluster, r *fnv1.RunFunctionRequest) []*fnv1.RunFunctionResponse {
	t.Helper()
	r = proto.Clone(r).(*fnv1.RunFunctionRequest)
	var given *fnv1.Requirements
	var rsps []*fnv1.RunFunctionResponse
	for range 5 {
		rsp := run(t, r)
		rsps = append(rsps, rsp)
		for _, res := range rsp.GetResults() {
			if res.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
				return rsps
			}
		}
		if proto.Equal(rsp.GetRequirements(), given) {
			return rsps
		}
		given = rsp.GetRequirements()
		r.RequiredResources = c.fetch(t, given)
		r.Context = rsp.GetContext()
	}
	t.Fatalf("the requirements did not settle in 5 calls")
	return nil
}

// shown is what a person sees of a response: the XR's status, the readiness
// of each composed resource, the conditions and the results. Not the
// requirements, which say how many calls it took.
func shown(t *testing.T, rsp *fnv1.RunFunctionResponse) any {
	t.Helper()
	s := statusOnly(rsp)
	s.Requirements = nil
	s.Meta = nil
	b, err := protojson.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// A statusScenario is a stack, what Crossplane observed of it, and the pods
// its cluster runs (which it sends when the function asks for them); the
// cluster has the CRD of every optional kind.
type statusScenario struct {
	xr       map[string]any
	observed map[string]map[string]any
	pods     []corev1.Pod
}

// statusScenarios are the status tests' fixtures (status/*_test.go), every
// reason of docs/status.md and every reason of the severity list, on a
// cluster (the XR has a UID).
func statusScenarios() map[string]statusScenario {
	const (
		p1 = "s-m-deployment-vllm-5d8f7b9c6d-x7k2p"
		p2 = "s-m-deployment-vllm-5d8f7b9c6d-b4n9q"
		rp = "s-deployment-router-6c9d8f7b5-q4m8z"
	)
	notReady := stacktest.ObservedDeployment("s-m-deployment-vllm", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable)
	unready := func(pods ...corev1.Pod) statusScenario {
		return statusScenario{observed: stacktest.ObservedWith("engine-m", notReady), pods: pods}
	}
	two := func(change ...func(*appsv1.Deployment)) map[string]any {
		return stacktest.ObservedDeployment("s-m-deployment-vllm", 2, change...)
	}
	routerPod := stacktest.TestPod(rp, "router", "router", stacktest.Scheduled(corev1.ContainerStatus{
		Name: "router-container", Image: "lmcache/lmstack-router:v9", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ErrImagePull", Message: `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/lmcache/lmstack-router:v9": not found`,
		}},
	}))
	evicted := stacktest.ModelPod("s-m-deployment-vllm-5d8f7b9c6d-old", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"})
	serving := []corev1.Pod{stacktest.ReadyPod(p1), evicted, stacktest.TestPod(rp, "router", "router", corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}})}

	sc := map[string]statusScenario{
		// Serving, with pods that would say something if they were read.
		"Available":    {observed: stacktest.ObservedReady(), pods: serving},
		"ScaledToZero": {xr: with("replicas", 0), observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 0)), pods: []corev1.Pod{evicted}},

		// EnginesReady from the Deployment.
		"engine/NotCreated":              {observed: stacktest.ObservedWith("engine-m", nil), pods: []corev1.Pod{stacktest.UnschedulablePod(p1)}},
		"engine/GenerationNotObserved":   {observed: stacktest.ObservedWith("engine-m", two(func(d *appsv1.Deployment) { d.Generation = 2 })), pods: []corev1.Pod{stacktest.StartingPod(p1)}},
		"engine/RollingOut":              {xr: with("replicas", 2), observed: stacktest.ObservedWith("engine-m", two(stacktest.Counts(1, 2, 2))), pods: []corev1.Pod{stacktest.ReadyPod(p1), stacktest.ReadyPod(p2)}},
		"engine/PartlyAvailable":         {xr: with("replicas", 2), observed: stacktest.ObservedWith("engine-m", two(stacktest.Counts(2, 1, 1), stacktest.Unavailable)), pods: []corev1.Pod{stacktest.ReadyPod(p1), stacktest.StartingPod(p2)}},
		"engine/NoneReady":               unready(),
		"engine/AvailableConditionFalse": {observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 1, stacktest.Unavailable)), pods: []corev1.Pod{stacktest.ReadyPod(p1)}},
		"engine/AvailableConditionMissing": {observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 1, func(d *appsv1.Deployment) { d.Status.Conditions = nil })),
			pods: []corev1.Pod{stacktest.ReadyPod(p1)}},
		"engine/ProgressDeadlineExceeded": {xr: with("replicas", 2), observed: stacktest.ObservedWith("engine-m", two(stacktest.Counts(2, 0, 0), stacktest.Unavailable,
			stacktest.Condition(appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded", `ReplicaSet "s-m-deployment-vllm-5d8f7b9c6d" has timed out progressing.`))),
			pods: []corev1.Pod{stacktest.StartingPod(p1), stacktest.StartingPod(p2)}},
		"engine/ReplicaFailure": {observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 1, stacktest.Counts(0, 0, 0), stacktest.Unavailable,
			stacktest.Condition(appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate", `pods "s-m-deployment-vllm-5d8f7b9c6d-x7k2p" is forbidden: exceeded quota: gpu-quota, requested: requests.nvidia.com/gpu=1, used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4`)))},

		// EnginesReady from the pods (status/pods_test.go TestPodIssues).
		"pods/Unschedulable":             unready(stacktest.UnschedulablePod(p1)),
		"pods/ImagePullBackOff":          unready(stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Waiting("ImagePullBackOff", `Back-off pulling image "docker.io/vllm/vllm-openai:v0.8.3"`)))),
		"pods/ErrImagePull":              unready(stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Waiting("ErrImagePull", `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/vllm/vllm-openai:v0.8.3": not found`)))),
		"pods/CrashLoopBackOffOOMKilled": unready(stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Restarted(stacktest.Waiting("CrashLoopBackOff", "back-off 2m40s restarting failed container=vllm pod="+p1), "OOMKilled", 137)))),
		"pods/CrashLoopBackOffError":     unready(stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Restarted(stacktest.Waiting("CrashLoopBackOff", "back-off 20s restarting failed container=vllm pod="+p1), "Error", 1)))),
		"pods/Terminated":                unready(stacktest.ModelPod(p1, stacktest.Scheduled(corev1.ContainerStatus{Name: "vllm", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137}}}))),
		"pods/MissingSecret":             unready(stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Waiting("CreateContainerConfigError", `secret "huggingface-token" not found`)))),
		"pods/StartupProbeNotPassed":     unready(stacktest.StartingPod(p1)),
		"pods/StartingAgainAfterOOM":     unready(stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Restarted(stacktest.Running(false, false), "OOMKilled", 137)))),
		"pods/ReadinessProbeFails":       unready(stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Running(true, false)))),
		"pods/ContainerCreating":         unready(stacktest.ModelPod(p1, stacktest.Scheduled(stacktest.Waiting("ContainerCreating", "")))),
		"pods/ScheduledNoStatusYet": unready(stacktest.ModelPod(p1, corev1.PodStatus{Phase: corev1.PodPending,
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}})),
		"pods/Evicted": unready(stacktest.ModelPod(p1, corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted",
			Message: "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 2Gi."})),
		"pods/TerminatingPodsAreNotReported": unready(func() corev1.Pod {
			p := stacktest.UnschedulablePod(p1)
			p.DeletionTimestamp = &metav1.Time{Time: time.Date(2025, 6, 2, 10, 0, 0, 0, time.UTC)}
			return p
		}()),
		"pods/MostSevereReasonWins": {xr: with("replicas", int64(2)),
			observed: stacktest.ObservedWith("engine-m", stacktest.ObservedDeployment("s-m-deployment-vllm", 2, stacktest.Counts(2, 0, 0), stacktest.Unavailable)),
			pods:     []corev1.Pod{stacktest.StartingPod(p1), stacktest.UnschedulablePod(p2)}},
		"pods/OneModelOfTwo": {xr: multiXR("a", "b"), observed: map[string]map[string]any{
			"engine-a": stacktest.ObservedDeployment("s-a-deployment-vllm", 1), "engine-b": stacktest.ObservedDeployment("s-b-deployment-vllm", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable),
			"engine-a-storage": stacktest.ObservedClaim("s-a-storage-claim", "Bound"), "engine-b-storage": stacktest.ObservedClaim("s-b-storage-claim", "Pending"),
		}, pods: []corev1.Pod{
			stacktest.TestPod("s-a-deployment-vllm-1", "serving-engine", "a", corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted"}),
			stacktest.TestPod("s-b-deployment-vllm-1", "serving-engine", "b", stacktest.UnschedulablePod("x").Status),
		}},

		// RouterReady.
		"router/ScaledToZero":         {xr: with("routerConfig.replicas", 0), observed: stacktest.ObservedWith("router", stacktest.ObservedDeployment("s-deployment-router", 0))},
		"router/DeploymentNotCreated": {observed: stacktest.ObservedWith("router", nil), pods: []corev1.Pod{routerPod}},
		"router/ServiceNotCreated":    {observed: stacktest.ObservedWith("router-service", nil), pods: []corev1.Pod{routerPod}},
		"router/ImagePullError": {observed: stacktest.ObservedWith("router", stacktest.ObservedDeployment("s-deployment-router", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable)),
			pods: []corev1.Pod{routerPod, stacktest.UnschedulablePod(p1)}},
		"router/NotAvailableAndNoService": {observed: stacktest.ObservedWith("router", stacktest.ObservedDeployment("s-deployment-router", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable), "router-service", nil)},

		// StorageReady.
		"storage/Pending":    {observed: stacktest.ObservedWith("engine-m-storage", stacktest.ObservedClaim("s-m-storage-claim", "Pending")), pods: serving},
		"storage/Lost":       {observed: stacktest.ObservedWith("engine-m-storage", stacktest.ObservedClaim("s-m-storage-claim", "Lost")), pods: serving},
		"storage/NotCreated": {observed: stacktest.ObservedWith("engine-m-storage", nil), pods: serving},
		"storage/Disabled":   {xr: with("storage.enabled", false), observed: stacktest.ObservedWith("engine-m-storage", nil), pods: serving},

		// The first reconcile: nothing observed.
		"NothingObserved": {pods: []corev1.Pod{stacktest.UnschedulablePod(p1)}},
	}

	// RouterReady on the inference extension (status/pools_test.go).
	gie := with("inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw", "namespace": "gws"}}})
	pool := func(conds ...[3]string) map[string]any {
		o := stacktest.ObservedObject("inference.networking.k8s.io/v1", "InferencePool", "s-m-pool")
		if conds == nil {
			return o
		}
		var cs []any
		for _, c := range conds {
			cs = append(cs, map[string]any{"type": c[0], "status": c[1], "reason": c[2], "message": "m"})
		}
		o["status"] = map[string]any{"parents": []any{map[string]any{
			"parentRef":  map[string]any{"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw", "namespace": "gws"},
			"conditions": cs,
		}}}
		return o
	}
	accepted := pool([3]string{"Accepted", "True", "Accepted"}, [3]string{"ResolvedRefs", "True", "ResolvedRefs"})
	gieObserved := func(kv ...any) map[string]map[string]any {
		o := stacktest.ObservedReady()
		delete(o, "router")
		delete(o, "router-service")
		o["engine-m-epp"] = stacktest.ObservedDeployment("s-m-epp", 1)
		o["engine-m-inferencepool"] = accepted
		o["inference-httproute"] = stacktest.ObservedObject("gateway.networking.k8s.io/v1", "HTTPRoute", "s-m-route")
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == nil {
				delete(o, kv[i].(string))
				continue
			}
			o[kv[i].(string)] = kv[i+1].(map[string]any)
		}
		return o
	}
	for name, observed := range map[string]map[string]map[string]any{
		"Ready":             gieObserved(),
		"NoParent":          gieObserved("engine-m-inferencepool", pool()),
		"NotAccepted":       gieObserved("engine-m-inferencepool", pool([3]string{"Accepted", "False", "NotSupportedByGateway"}, [3]string{"ResolvedRefs", "True", "ResolvedRefs"})),
		"RefsNotResolved":   gieObserved("engine-m-inferencepool", pool([3]string{"Accepted", "True", "Accepted"}, [3]string{"ResolvedRefs", "False", "InvalidExtensionRef"})),
		"PoolNotCreated":    gieObserved("engine-m-inferencepool", nil),
		"RouteNotCreated":   gieObserved("inference-httproute", nil),
		"PickerNotCreated":  gieObserved("engine-m-epp", nil),
		"PickerUnavailable": gieObserved("engine-m-epp", stacktest.ObservedDeployment("s-m-epp", 1, stacktest.Counts(1, 0, 0), stacktest.Unavailable)),
		"EngineUnready":     gieObserved("engine-m", notReady),
	} {
		sc["extension/"+name] = statusScenario{xr: gie, observed: observed, pods: append([]corev1.Pod{stacktest.UnschedulablePod(p1)}, serving...)}
	}

	// A multi-node model (status/status_test.go TestMultiNodeStatus).
	multi := with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "multiNode", map[string]any{"podsPerReplica": 2}, "replicas", 2,
		"vllmConfig.tensorParallelSize", 2, "resources.gpu", "1", "storage.accessModes", []any{"ReadWriteMany"})
	lws := func(change ...func(*lwsv1.LeaderWorkerSet)) map[string]any {
		groups := int32(2)
		l := &lwsv1.LeaderWorkerSet{
			TypeMeta:   metav1.TypeMeta{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet"},
			ObjectMeta: metav1.ObjectMeta{Name: "s-m-lws", Namespace: "llm", Generation: 1},
			Spec:       lwsv1.LeaderWorkerSetSpec{Replicas: &groups},
			Status: lwsv1.LeaderWorkerSetStatus{Replicas: groups, ReadyReplicas: groups, UpdatedReplicas: groups, Conditions: []metav1.Condition{
				{Type: "Available", Status: metav1.ConditionTrue, Reason: "AllGroupsReady", Message: "All replicas are ready", ObservedGeneration: 1},
			}},
		}
		for _, c := range change {
			c(l)
		}
		return stacktest.ToMap(l)
	}
	worker := stacktest.TestPod("s-m-lws-1-1", "serving-engine-worker", "m", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}})
	leader := stacktest.TestPod("s-m-lws-1", "serving-engine", "m", stacktest.Scheduled(stacktest.Running(false, false)))
	for name, l := range map[string]map[string]any{
		"Ready":           lws(),
		"NotCreated":      nil,
		"NoControllerYet": lws(func(l *lwsv1.LeaderWorkerSet) { l.Status = lwsv1.LeaderWorkerSetStatus{} }),
		"GroupWaitsForWorker": lws(func(l *lwsv1.LeaderWorkerSet) {
			l.Status.ReadyReplicas = 1
			l.Status.Conditions[0] = metav1.Condition{Type: "Available", Status: metav1.ConditionFalse, Reason: "GroupsNotReady", ObservedGeneration: 1}
		}),
		"RollingOut":           lws(func(l *lwsv1.LeaderWorkerSet) { l.Status.UpdatedReplicas = 1 }),
		"ConditionOfOlderSpec": lws(func(l *lwsv1.LeaderWorkerSet) { l.Generation = 2 }),
	} {
		obs := stacktest.ObservedWith("engine-m", nil)
		if l != nil {
			obs["engine-m-leaderworkerset"] = l
		}
		sc["multinode/"+name] = statusScenario{xr: multi, observed: obs, pods: []corev1.Pod{worker, leader}}
	}
	for name, s := range sc {
		if s.xr == nil {
			s.xr = minimalXR()
		}
		s.xr = onCluster(s.xr)
		sc[name] = s
	}
	return sc
}

// statusThroughCallsFile holds, for every scenario of statusScenarios, what
// the first call of a reconcile shows and what its last call shows, as the
// function answered before it asked for pods only while a workload is not
// ready (issue 34).
const statusThroughCallsFile = "testdata/golden/status-through-calls.yaml"

// TestStatusThroughCalls: through the sequence of calls Crossplane makes in
// one reconcile, every scenario shows the same status, readiness,
// conditions and results, on the first call and on the last, as
// statusThroughCallsFile holds (`go test ./fn -run TestStatusThroughCalls
// -update` rewrites it).
func TestStatusThroughCalls(t *testing.T) {
	got := map[string]any{}
	for name, s := range statusScenarios() {
		rsps := reconcile(t, cluster{pods: s.pods, crds: everyCRD()}, req(t, s.xr, nil, s.observed))
		got[name] = map[string]any{"first": shown(t, rsps[0]), "last": shown(t, rsps[len(rsps)-1])}
	}
	if *update {
		y, err := yaml.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(statusThroughCallsFile, y, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	y, err := os.ReadFile(filepath.Clean(statusThroughCallsFile))
	if err != nil {
		t.Fatalf("cannot read %s (go test ./fn -run TestStatusThroughCalls -update writes it): %v", statusThroughCallsFile, err)
	}
	want := map[string]any{}
	if err := yaml.Unmarshal(y, &want); err != nil {
		t.Fatal(err)
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range got {
			if !yield(k) {
				return
			}
		}
	}) {
		if diff := cmp.Diff(want[name], got[name]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("%s: in %s, no longer a scenario", name, statusThroughCallsFile)
		}
	}
	// Every reason of docs/status.md shows on some scenario's last call.
	reasons := map[string]bool{}
	for _, v := range got {
		for _, c := range v.(map[string]any)["last"].(map[string]any)["conditions"].([]any) {
			reasons[c.(map[string]any)["reason"].(string)] = true
		}
	}
	for _, r := range documentedReasons(t) {
		if !reasons[r] {
			t.Errorf("no scenario shows reason %s of docs/status.md", r)
		}
	}
}

// documentedReasons are the reasons docs/status.md lists in its table, and
// Starting, which it names above it.
func documentedReasons(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../docs/status.md")
	if err != nil {
		t.Fatal(err)
	}
	reasons := []string{"Starting"}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cell := strings.Split(line, "|")[1]
		for _, r := range strings.Split(cell, ",") {
			reasons = append(reasons, strings.Trim(strings.TrimSpace(r), "`"))
		}
	}
	if len(reasons) < 10 {
		t.Fatalf("docs/status.md lists %d reasons: %v", len(reasons), reasons)
	}
	return reasons
}

// multiXR is a stack of the given models, each by URL.
func multiXR(models ...string) map[string]any {
	items := make([]any, 0, len(models))
	for _, m := range models {
		items = append(items, map[string]any{"name": m, "modelURL": "org/" + m})
	}
	xr := minimalXR()
	xr["spec"] = map[string]any{"models": items}
	return xr
}
