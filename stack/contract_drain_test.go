package stack

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// The drain half of the behaviour contract (issue 43): an engine pod stops
// without cutting requests in flight, as each release and router do it
// (release-behaviour.tsv: vllm:drains-on-sigterm, vllm:drain-waits-kv-reads,
// router:drops-terminating-pod).

// defaultGrace is Kubernetes' terminationGracePeriodSeconds when unset.
const defaultGrace = 30

func preStopSleep(c corev1.Container) int64 {
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
		return 0
	}
	return c.Lifecycle.PreStop.Sleep.Seconds
}

// checkDrain checks the engine pods of a stack rendered for vLLM release v
// and router release router, with the warnings the function gave.
func (b behaviourFacts) checkDrain(r rendered, v upVersion, router string, warnings []string) []string {
	var problems []string
	report := func(object, format string, a ...any) {
		problems = append(problems, object+": "+fmt.Sprintf(format, a...))
	}
	pods := r.withContainer(build.EngineContainer)
	for _, l := range r.leaderWorkerSets {
		pods = append(pods, lwsDeployments(l)...)
	}
	drains := false
	for _, d := range pods {
		c, _ := containerNamed(d, build.EngineContainer)
		object := "Deployment " + d.Name
		spec := d.Spec.Template.Spec
		t := int64(0)
		if s, ok := stacktest.ArgValue(c.Args, "--shutdown-timeout"); ok {
			t, _ = strconv.ParseInt(s, 10, 64)
		}
		sleep, grace := preStopSleep(c), ptr.Deref(spec.TerminationGracePeriodSeconds, defaultGrace)
		drains = drains || t > 0 || sleep > 0
		if b.holds("vllm:drains-on-sigterm", v) && t == 0 && spec.TerminationGracePeriodSeconds == nil {
			report(object, "vLLM %s aborts the requests in flight on SIGTERM without --shutdown-timeout, and the pod sets no drain", v)
		}
		if grace <= sleep+t {
			report(object, "terminationGracePeriodSeconds %d does not cover the preStop sleep %d and vLLM's drain %d: the kubelet kills vLLM while it drains", grace, sleep, t)
		}
		cfg, _ := stacktest.ArgValue(c.Args, "--kv-transfer-config")
		if cfg != "" && strings.Contains(d.Name, "-prefill-") && t > 0 && !b.holds("vllm:drain-waits-kv-reads", v) && sleep < t {
			report(object, "a prefill engine of vLLM %s exits once its own requests finish, while decode may still read their KV: the preStop sleep %d must hold the drain %d", v, sleep, t)
		}
		for _, sc := range spec.Containers {
			if sc.Name == inferencepool.SidecarContainerName && preStopSleep(sc) < sleep+t {
				report(object, "container %s leaves after %d s, before vLLM's drain ends (%d s): requests in flight pass through it", sc.Name, preStopSleep(sc), sleep+t)
			}
		}
	}
	rv, err := parseUpVersion(router)
	if drains && err == nil && len(r.withComponent(names.ComponentRouter)) > 0 && !b.holds("router:drops-terminating-pod", rv) &&
		!warned(warnings, "keeps sending requests to an engine pod that is being deleted") {
		problems = append(problems, fmt.Sprintf("router %s keeps sending requests to a draining engine pod, and no warning says so", router))
	}
	return problems
}

// TestContractDrainChecks: each check finds the defect it is for, as the
// function rendered it before issue 43 (no flag, no preStop, the default
// grace), and passes what is right.
func TestContractDrainChecks(t *testing.T) {
	b := loadBehaviourFacts(t)
	pod := func(name string, grace, sleep int64, args []string, sidecarSleep int64) appsv1.Deployment {
		c := container(build.EngineContainer, engineArgsWith(args...))
		if sleep > 0 {
			c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: sleep}}}
		}
		d := appsv1.Deployment{}
		d.Name = name
		d.Spec.Template.Spec.Containers = []corev1.Container{c}
		if grace > 0 {
			d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(grace)
		}
		if sidecarSleep >= 0 {
			sc := corev1.Container{Name: inferencepool.SidecarContainerName}
			if sidecarSleep > 0 {
				sc.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: sidecarSleep}}}
			}
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, sc)
		}
		return d
	}
	drained := []string{"--shutdown-timeout=30"}
	nixl := []string{"--shutdown-timeout=30", "--kv-transfer-config", `{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`}
	withRouter := func(ds ...appsv1.Deployment) rendered {
		r := behaviourStack(corev1.Container{}, "roundrobin")
		r.deployments = append(ds, r.deployments[1])
		return r
	}
	const warning = "spec.shutdown: router 0.1.6 (…) keeps sending requests to an engine pod that is being deleted until it exits …"
	cases := map[string]struct {
		r        rendered
		vllm     string
		router   string
		warnings []string
		want     []string
	}{
		"AbortsOnSigterm": {r: withRouter(pod("s-m", 0, 0, nil, -1)), vllm: "0.22.0",
			want: []string{"Deployment s-m: vLLM 0.22.0 aborts the requests in flight on SIGTERM without --shutdown-timeout, and the pod sets no drain"}},
		"Drains":            {r: withRouter(pod("s-m", 55, 5, drained, -1)), vllm: "0.22.0"},
		"DrainsInPreStop":   {r: withRouter(pod("s-m", 55, 35, nil, -1)), vllm: "0.16.0"},
		"NothingBefore0190": {r: withRouter(pod("s-m", 0, 0, nil, -1)), vllm: "0.16.0"},
		"GraceTooShort": {r: withRouter(pod("s-m", 30, 5, drained, -1)), vllm: "0.22.0",
			want: []string{"Deployment s-m: terminationGracePeriodSeconds 30 does not cover the preStop sleep 5 and vLLM's drain 30: the kubelet kills vLLM while it drains"}},
		"PrefillExitsBeforeKVRead": {r: withRouter(pod("s-m-prefill-deployment-vllm", 55, 5, nixl, -1)), vllm: "0.20.0",
			want: []string{"Deployment s-m-prefill-deployment-vllm: a prefill engine of vLLM 0.20.0 exits once its own requests finish, while decode may still read their KV: the preStop sleep 5 must hold the drain 30"}},
		"PrefillHeldInPreStop": {r: withRouter(pod("s-m-prefill-deployment-vllm", 85, 35, nixl, -1)), vllm: "0.20.0"},
		"PrefillWaitsFrom0220": {r: withRouter(pod("s-m-prefill-deployment-vllm", 55, 5, nixl, -1)), vllm: "0.22.0"},
		"SidecarLeavesFirst": {r: withRouter(pod("s-m-decode", 55, 5, drained, 0)), vllm: "0.22.0",
			want: []string{"Deployment s-m-decode: container routing-sidecar leaves after 0 s, before vLLM's drain ends (35 s): requests in flight pass through it"}},
		"SidecarStays": {r: withRouter(pod("s-m-decode", 55, 5, drained, 35)), vllm: "0.22.0"},
		"OldRouterUnwarned": {r: withRouter(pod("s-m", 55, 5, drained, -1)), vllm: "0.22.0", router: "0.1.6",
			want: []string{"router 0.1.6 keeps sending requests to a draining engine pod, and no warning says so"}},
		"OldRouterWarned": {r: withRouter(pod("s-m", 55, 5, drained, -1)), vllm: "0.22.0", router: "0.1.6", warnings: []string{warning}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			v, err := parseUpVersion(tc.vllm)
			if err != nil {
				t.Fatal(err)
			}
			got := b.checkDrain(tc.r, v, cmp.Or(tc.router, "0.1.12"), tc.warnings)
			if diff := gocmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
