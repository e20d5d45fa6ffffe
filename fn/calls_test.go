package fn

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
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
	pool := func(conds ...[3]string) map[string]any { return stacktest.ObservedPool("s-m-pool", conds...) }
	gieObserved := func(kv ...any) map[string]map[string]any {
		o := stacktest.ObservedExtension()
		o["engine-m-httproute"] = stacktest.ObservedRoute("s-m-httproute", "m")
		return stacktest.Replaced(o, kv...)
	}
	for name, observed := range map[string]map[string]map[string]any{
		"Ready":             gieObserved(),
		"NoParent":          gieObserved("engine-m-inferencepool", pool()),
		"NotAccepted":       gieObserved("engine-m-inferencepool", pool([3]string{"Accepted", "False", "NotSupportedByGateway"}, [3]string{"ResolvedRefs", "True", "ResolvedRefs"})),
		"RefsNotResolved":   gieObserved("engine-m-inferencepool", pool([3]string{"Accepted", "True", "Accepted"}, [3]string{"ResolvedRefs", "False", "InvalidExtensionRef"})),
		"PoolNotCreated":    gieObserved("engine-m-inferencepool", nil),
		"RouteNotCreated":   gieObserved("engine-m-httproute", nil),
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
		return stacktest.ObservedLWS("s-m-lws", 2, change...)
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
		// A stack whose workloads all serve, and whose optional kinds'
		// objects are all observed, takes one call; any other two.
		if oneCall := slices.Contains([]string{"Available", "ScaledToZero", "router/ScaledToZero", "storage/Pending", "storage/Lost", "storage/NotCreated", "storage/Disabled", "extension/Ready", "extension/NoParent", "extension/NotAccepted", "extension/RefsNotResolved", "extension/PickerNotCreated", "extension/PickerUnavailable", "multinode/Ready"}, name); oneCall != (len(rsps) == 1) {
			t.Errorf("%s: %d calls", name, len(rsps))
		}
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
func multiXR(models ...string) map[string]any { return stacktest.MultiXR(models...) }

// serving is what Crossplane observes of a stack that serves: every object
// the function composes for it, once every earlier one is observed, with the
// status its controller writes when it is ready and current.
func serving(t *testing.T, xr map[string]any) map[string]map[string]any {
	t.Helper()
	observed := map[string]map[string]any{}
	for range 5 {
		rsp := mustRun(t, req(t, xr, nil, observed))
		if len(rsp.GetDesired().GetResources()) == len(observed) {
			return observed
		}
		for k, r := range rsp.GetDesired().GetResources() {
			observed[k] = readyObject(r.GetResource().AsMap())
		}
	}
	t.Fatalf("the composed objects did not settle")
	return nil
}

// readyObject is a composed object as observed once ready: a workload with
// every replica or group updated and available, seen by its controller; a
// claim Bound; a ScaledObject Ready; an InferencePool accepted; a Job
// Complete.
func readyObject(o map[string]any) map[string]any {
	setPath(o, "metadata.generation", int64(1))
	replicas := int64(1)
	if spec, _ := o["spec"].(map[string]any); spec == nil {
	} else if r, ok := spec["replicas"].(float64); ok {
		replicas = int64(r)
	}
	switch o["kind"] {
	case "Deployment":
		o["status"] = map[string]any{"observedGeneration": int64(1), "replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
			"conditions": []any{map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}}}
	case "LeaderWorkerSet":
		o["status"] = map[string]any{"replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas,
			"conditions": []any{map[string]any{"type": "Available", "status": "True", "reason": "AllGroupsReady", "observedGeneration": int64(1)}}}
	case "PersistentVolumeClaim":
		o["status"] = map[string]any{"phase": "Bound"}
	case "ScaledObject":
		o["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}
	case "Job": // a model cache's fill Job, done
		o["status"] = map[string]any{"succeeded": int64(1), "conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}
	case "InferencePool":
		o["status"] = map[string]any{"parents": []any{map[string]any{"parentRef": map[string]any{"name": "gw"}, "conditions": []any{
			map[string]any{"type": "Accepted", "status": "True"}, map[string]any{"type": "ResolvedRefs", "status": "True"}}}}}
	}
	return o
}

// TestServingStackRequiresNothing: once every object of a stack is observed
// ready and current, the function requires nothing, neither pods nor CRDs,
// so Crossplane's reconcile is one call; every example and test stack, on
// a cluster, with and without the Input, but those with runtime adapters.
func TestServingStackRequiresNothing(t *testing.T) {
	for _, p := range stacktest.Stacks(t) {
		if stacktest.InputFor(stacktest.LoadXR(t, p, "")) != nil {
			continue // runtime adapters ask for the pods: TestRuntimeAdaptersRequirePods
		}
		for _, in := range []map[string]any{nil, compositionInput()} {
			name := strings.TrimPrefix(p, "../")
			if in != nil {
				name += " +input"
			}
			t.Run(name, func(t *testing.T) {
				xr := onCluster(stacktest.LoadXR(t, p, ""))
				r := req(t, xr, in, serving(t, xr))
				rsps := reconcile(t, cluster{crds: everyCRD()}, r)
				if diff := cmp.Diff((*fnv1.Requirements)(nil), rsps[0].GetRequirements(), protocmp.Transform()); diff != "" {
					t.Errorf("requirements of a serving stack (-want +got):\n%s", diff)
				}
				if len(rsps) != 1 {
					t.Errorf("%d calls in a reconcile of a serving stack, want 1", len(rsps))
				}
				for _, c := range rsps[0].GetConditions() {
					if c.GetStatus() != fnv1.Status_STATUS_CONDITION_TRUE {
						t.Errorf("condition %s of a serving stack: %s: %s", c.GetType(), c.GetReason(), c.GetMessage())
					}
				}
			})
		}
	}
}

// TestUnreadyWorkloadRequiresPods: while any engine's Deployment or
// LeaderWorkerSet, or the router's Deployment, is not observed, or not ready
// and current by any of its counts, the function asks for the stack's pods
// (and a multi-node stack's workers), which say why; the same on the call
// that carries them, so Crossplane settles after two calls. An optional
// kind's CRD is asked for while one of its objects is not observed.
func TestUnreadyWorkloadRequiresPods(t *testing.T) {
	pods := func(ns string, components ...string) map[string]*fnv1.ResourceSelector {
		out := map[string]*fnv1.ResourceSelector{}
		for _, c := range components {
			name := map[string]string{"serving-engine": enginePodsRequirement, "serving-engine-worker": engineWorkerPodsRequirement, "router": routerPodsRequirement}[c]
			out[name] = &fnv1.ResourceSelector{ApiVersion: "v1", Kind: "Pod", Namespace: ptr.To(ns),
				Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{
					"app.kubernetes.io/instance": "s", "app.kubernetes.io/component": c}}}}
		}
		return out
	}
	crd := func(name string) *fnv1.ResourceSelector {
		return &fnv1.ResourceSelector{ApiVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition", Match: &fnv1.ResourceSelector_MatchName{MatchName: name}}
	}
	plain := onCluster(minimalXR())
	multi := onCluster(with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "multiNode", map[string]any{"podsPerReplica": 2}, "replicas", 2,
		"vllmConfig.tensorParallelSize", 2, "resources.gpu", "1", "storage.accessModes", []any{"ReadWriteMany"}))
	keda := onCluster(with("autoscaling", map[string]any{"type": "keda", "maxReplicas": 2, "prometheusAddress": "http://p:9090"}))
	gie := onCluster(with("inferenceExtension", map[string]any{"parentRefs": []any{map[string]any{"name": "gw", "namespace": "gws"}}}))
	changed := func(xr map[string]any, key string, change func(o map[string]any)) map[string]map[string]any {
		o := serving(t, xr)
		if change == nil {
			delete(o, key)
		} else {
			change(o[key])
		}
		return o
	}
	status := func(field string, v any) func(map[string]any) {
		return func(o map[string]any) { setPath(o, "status."+field, v) }
	}
	notAvailable := status("conditions", []any{map[string]any{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"}})
	plainPods, multiPods := pods("llm", "serving-engine", "router"), pods("llm", "serving-engine", "serving-engine-worker", "router")
	cases := map[string]struct {
		xr       map[string]any
		observed map[string]map[string]any
		want     map[string]*fnv1.ResourceSelector
	}{
		"nothing observed":        {plain, nil, plainPods},
		"engine not observed":     {plain, changed(plain, "engine-m", nil), plainPods},
		"engine generation ahead": {plain, changed(plain, "engine-m", func(o map[string]any) { setPath(o, "metadata.generation", int64(2)) }), plainPods},
		"engine not updated":      {plain, changed(plain, "engine-m", status("updatedReplicas", int64(0))), plainPods},
		"engine not ready":        {plain, changed(plain, "engine-m", func(o map[string]any) { status("readyReplicas", int64(0))(o); status("availableReplicas", int64(0))(o) }), plainPods},
		// Not a state a Deployment controller writes (an available replica
		// is ready); the status reads availability, not pods, and says
		// Available, as it did.
		"engine ready short of available: no pods": {plain, changed(plain, "engine-m", status("readyReplicas", int64(0))), nil},
		"engine not available":                     {plain, changed(plain, "engine-m", status("availableReplicas", int64(0))), plainPods},
		"engine not Available":                     {plain, changed(plain, "engine-m", notAvailable), plainPods},
		"engine does not decode":                   {plain, changed(plain, "engine-m", status("replicas", "many")), plainPods},
		"router not observed":                      {plain, changed(plain, "router", nil), plainPods},
		"router not available":                     {plain, changed(plain, "router", status("availableReplicas", int64(0))), plainPods},
		"router Service not observed":              {plain, changed(plain, "router-service", nil), plainPods},
		"claim Pending: the pods say nothing":      {plain, changed(plain, "engine-m-storage", status("phase", "Pending")), nil},
		"LeaderWorkerSet not observed":             {multi, changed(multi, "engine-m-leaderworkerset", nil), mergeSelectors(multiPods, map[string]*fnv1.ResourceSelector{"crd-leaderworkersets.leaderworkerset.x-k8s.io": crd("leaderworkersets.leaderworkerset.x-k8s.io")})},
		"LeaderWorkerSet group not ready":          {multi, changed(multi, "engine-m-leaderworkerset", status("readyReplicas", int64(1))), multiPods},
		"LeaderWorkerSet not updated":              {multi, changed(multi, "engine-m-leaderworkerset", status("updatedReplicas", int64(1))), multiPods},
		"LeaderWorkerSet generation ahead":         {multi, changed(multi, "engine-m-leaderworkerset", func(o map[string]any) { setPath(o, "metadata.generation", int64(2)) }), multiPods},
		"ScaledObject not observed":                {keda, changed(keda, "engine-m-scaledobject", nil), map[string]*fnv1.ResourceSelector{"crd-scaledobjects.keda.sh": crd("scaledobjects.keda.sh")}},
		"ScaledObject not Ready: no pods":          {keda, changed(keda, "engine-m-scaledobject", status("conditions", []any{})), nil},
		"picker not available: no pods":            {gie, changed(gie, "engine-m-epp", status("availableReplicas", int64(0))), nil},
		"InferencePool not observed":               {gie, changed(gie, "engine-m-inferencepool", nil), map[string]*fnv1.ResourceSelector{"crd-inferencepools.inference.networking.k8s.io": crd("inferencepools.inference.networking.k8s.io")}},
		"HTTPRoute not observed":                   {gie, changed(gie, "engine-m-httproute", nil), map[string]*fnv1.ResourceSelector{"crd-httproutes.gateway.networking.k8s.io": crd("httproutes.gateway.networking.k8s.io")}},
		"engine on the extension not Available":    {gie, changed(gie, "engine-m", notAvailable), pods("llm", "serving-engine", "router")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var want *fnv1.Requirements
			if tc.want != nil {
				want = &fnv1.Requirements{Resources: tc.want}
			}
			rsps := reconcile(t, cluster{crds: everyCRD()}, req(t, tc.xr, nil, tc.observed))
			if diff := cmp.Diff(want, rsps[0].GetRequirements(), protocmp.Transform()); diff != "" {
				t.Errorf("requirements (-want +got):\n%s", diff)
			}
			if wantCalls := map[bool]int{true: 1, false: 2}[want == nil]; len(rsps) != wantCalls {
				t.Errorf("%d calls, want %d", len(rsps), wantCalls)
			}
		})
	}
}

func mergeSelectors(ms ...map[string]*fnv1.ResourceSelector) map[string]*fnv1.ResourceSelector {
	out := map[string]*fnv1.ResourceSelector{}
	for _, m := range ms {
		maps.Copy(out, m)
	}
	return out
}

// TestRuntimeAdaptersRequirePods: a serving model with runtime adapters
// still asks for its pods, whose annotations say where each adapter is
// loaded (status.models[].adapters); the second call of the reconcile
// carries them and reports each adapter.
func TestRuntimeAdaptersRequirePods(t *testing.T) {
	in := map[string]any{"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input", "adapterSync": map[string]any{"image": "ghcr.io/vllm-project/function-vllm-stack:v0.1.0"}}
	xr := onCluster(with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12",
		"model.enableLoRA", true, "model.enableRuntimeAdapters", true,
		"model.adapters", []any{map[string]any{"name": "sql", "huggingFace": map[string]any{"repo": "org/sql-lora"}}}))
	observed := map[string]map[string]any{}
	for range 5 {
		rsp := mustRun(t, req(t, xr, in, observed))
		for k, r := range rsp.GetDesired().GetResources() {
			observed[k] = readyObject(r.GetResource().AsMap())
		}
	}
	rsp := mustRun(t, req(t, xr, in, observed))
	if c := conditionOfType(t, rsp, "EnginesReady"); c.Status != condTrue {
		t.Fatalf("the stack does not serve: %+v", c)
	}
	if _, ok := rsp.GetRequirements().GetResources()[enginePodsRequirement]; !ok {
		t.Fatalf("a serving model with runtime adapters does not ask for its pods: %v", rsp.GetRequirements())
	}
}
