package fn

import (
	"slices"
	"testing"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestDrainThroughRunFunction (issue 43): through RunFunction, a stack's
// engines drain by default; a changed shutdown block reaches the pod
// template on the next reconcile; --shutdown-timeout in extraArgs is a
// Fatal that names the field and leaves the composed objects alone.
func TestDrainThroughRunFunction(t *testing.T) {
	type drain struct {
		Args    []string
		PreStop *corev1.Lifecycle
		Grace   *int64
	}
	seen := func(rsp *fnv1.RunFunctionResponse) drain {
		pod := desired(t, rsp, "engine-m", &appsv1.Deployment{}).Spec.Template.Spec
		return drain{pod.Containers[0].Args, pod.Containers[0].Lifecycle, pod.TerminationGracePeriodSeconds}
	}
	sleep := func(s int64) *corev1.Lifecycle {
		return &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: s}}}
	}

	first := mustRun(t, reconciledRequest(t, minimalXR(), nil))
	want := drain{[]string{"org/m", "--host", "0.0.0.0", "--port", "8000", "--shutdown-timeout=30"}, sleep(5), ptr.To(int64(55))}
	if diff := cmp.Diff(want, seen(first)); diff != "" {
		t.Errorf("default drain (-want +got):\n%s", diff)
	}

	// The next reconcile, with what the first composed observed.
	observed := map[string]map[string]any{}
	for k, r := range first.GetDesired().GetResources() {
		observed[k] = r.GetResource().AsMap()
	}
	changed := with("shutdown", map[string]any{"drainSeconds": 300, "routingDelaySeconds": 15})
	want = drain{[]string{"org/m", "--host", "0.0.0.0", "--port", "8000", "--shutdown-timeout=300"}, sleep(15), ptr.To(int64(335))}
	if diff := cmp.Diff(want, seen(mustRun(t, req(t, changed, nil, observed)))); diff != "" {
		t.Errorf("configured drain (-want +got):\n%s", diff)
	}

	// vLLM 0.16.0 has no --shutdown-timeout: the preStop sleep holds the drain.
	old := with("vllmConfig.image", "vllm/vllm-openai:v0.16.0")
	want = drain{[]string{"org/m", "--host", "0.0.0.0", "--port", "8000"}, sleep(35), ptr.To(int64(55))}
	if diff := cmp.Diff(want, seen(mustRun(t, req(t, old, nil, observed)))); diff != "" {
		t.Errorf("drain on vLLM 0.16.0 (-want +got):\n%s", diff)
	}

	refused := with("vllmConfig.extraArgs", []any{"--shutdown-timeout", "60"})
	const msg = `invalid ProductionStack: spec.vllmConfig.extraArgs[0] "--shutdown-timeout" is refused: spec.shutdown.drainSeconds sets --shutdown-timeout; set it there, not in extraArgs`
	if got := fatal(t, run(t, req(t, refused, nil, observed))); got != msg {
		t.Errorf("Fatal:\n got: %s\nwant: %s", got, msg)
	}

	// A router before 0.1.7 cannot drop a draining pod: a warning on the XR
	// and the claim.
	rsp := mustRun(t, req(t, with("routerConfig.image", "lmcache/lmstack-router:v0.1.6"), nil, observed))
	const warning = "spec.shutdown: router 0.1.6 (routerConfig.image lmcache/lmstack-router:v0.1.6) keeps sending requests to an engine pod that is being deleted until it exits (router 0.1.7 and later drop it at once), so requests that reach a draining engine fail: use a router image of 0.1.7 or later"
	if !slices.ContainsFunc(rsp.GetResults(), func(r *fnv1.Result) bool {
		return r.GetSeverity() == fnv1.Severity_SEVERITY_WARNING && r.GetMessage() == warning && r.GetTarget() == fnv1.Target_TARGET_COMPOSITE_AND_CLAIM
	}) {
		t.Errorf("no warning %q in %v", warning, rsp.GetResults())
	}
}
