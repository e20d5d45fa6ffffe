package stack

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// The router's Kubernetes identity and its sleep-mode detection (issue 38
// §5), read from testdata/upstream/router-k8s-calls.tsv and
// router-sleep-detection.tsv, never from the function's code: the router's
// Role grants exactly the verbs its release calls in its discovery mode,
// for the features the stack uses, and the router sees sleep mode where an
// engine has it.

// routerCall is a row of router-k8s-calls.tsv.
type routerCall struct {
	first, last                   upVersion
	mode, feature, resource, verb string
}

func loadRouterCalls() ([]routerCall, error) {
	rows, err := readReleaseRows("router-k8s-calls.tsv", 8, 0)
	if err != nil {
		return nil, err
	}
	var out []routerCall
	for _, r := range rows {
		out = append(out, routerCall{first: r.first, last: r.last, mode: r.cols[2], feature: r.cols[3], resource: r.cols[4], verb: r.cols[5]})
	}
	return out, nil
}

// neededGrants are the resource/verb pairs router release v calls in a
// discovery mode, with or without engines that can sleep.
func neededGrants(calls []routerCall, v upVersion, mode string, sleep bool) []string {
	var out []string
	for _, c := range calls {
		if c.mode == mode && v.in(c.first, c.last) && (c.feature == "always" || c.feature == "sleep" && sleep) {
			out = append(out, c.resource+" "+c.verb)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// grantedPairs are the resource/verb pairs of the core group that rules
// grant, "*" as written.
func grantedPairs(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, r := range rules {
		if !anyOf(r.APIGroups, "") {
			continue
		}
		for _, res := range r.Resources {
			for _, verb := range r.Verbs {
				out = append(out, res+" "+verb)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// engineArgv is the argv of an engine container: command then args, as
// Kubernetes runs them.
func engineArgv(c corev1.Container) []string { return append(slices.Clone(c.Command), c.Args...) }

// canSleep reports whether an engine Deployment's vLLM runs with sleep mode.
func canSleep(d appsv1.Deployment) bool {
	c, ok := containerNamed(d, build.EngineContainer)
	return ok && slices.Contains(engineArgv(c), "--enable-sleep-mode")
}

// checkRouterGrants compares the router's Role with what release v calls:
// a verb it calls and is not granted fails that call; one granted and never
// called is a permission a stolen token has for nothing.
func checkRouterGrants(v upVersion, mode string, rules []rbacv1.PolicyRule, engines []appsv1.Deployment) []string {
	calls, err := loadRouterCalls()
	if err != nil {
		return []string{err.Error()}
	}
	need := neededGrants(calls, v, mode, slices.ContainsFunc(engines, canSleep))
	got := grantedPairs(rules)
	var problems []string
	for _, n := range need {
		res, verb, _ := strings.Cut(n, " ")
		if !slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
			return anyOf(r.APIGroups, "") && anyOf(r.Resources, res) && anyOf(r.Verbs, verb)
		}) {
			problems = append(problems, fmt.Sprintf("router %v with %s discovery calls %s, and its Role does not grant it", v, mode, n))
		}
	}
	for _, g := range got {
		if !slices.Contains(need, g) {
			problems = append(problems, fmt.Sprintf("its Role grants %s, which router %v with %s discovery never calls for this stack", g, v, mode))
		}
	}
	return problems
}

// sleepDetection is a row of router-sleep-detection.tsv.
type sleepDetection struct {
	first, last        upVersion
	mode, reads, empty string
}

func loadSleepDetection() ([]sleepDetection, error) {
	rows, err := readReleaseRows("router-sleep-detection.tsv", 6, 0)
	if err != nil {
		return nil, err
	}
	var out []sleepDetection
	for _, r := range rows {
		out = append(out, sleepDetection{first: r.first, last: r.last, mode: r.cols[2], reads: r.cols[3], empty: r.cols[4]})
	}
	return out, nil
}

// routerSeesSleep is what router release v concludes of an engine
// container: whether it believes the engine can sleep, and whether its
// check crashes on the container.
func routerSeesSleep(rows []sleepDetection, v upVersion, mode string, c corev1.Container) (sees, crashes bool, err error) {
	for _, r := range rows {
		if r.mode != mode || !v.in(r.first, r.last) {
			continue
		}
		if r.reads == "none" {
			return false, false, nil
		}
		if len(c.Command) == 0 {
			return r.empty == "sleep", r.empty == "crash", nil
		}
		return c.Name == build.EngineContainer && slices.Contains(c.Command, "--enable-sleep-mode"), false, nil
	}
	return false, false, fmt.Errorf("router-sleep-detection.tsv has no row for router %v with %s discovery", v, mode)
}

// checkSleepDetection: where the router's release reads sleep mode from a
// pod, it sees it in every engine that has it, and its check does not crash
// on one that has none.
func checkSleepDetection(v upVersion, mode string, engines []appsv1.Deployment) []string {
	rows, err := loadSleepDetection()
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	for _, d := range engines {
		c, _ := containerNamed(d, build.EngineContainer)
		sees, crashes, err := routerSeesSleep(rows, v, mode, c)
		switch {
		case err != nil:
			return []string{err.Error()}
		case crashes:
			problems = append(problems, fmt.Sprintf("router %v's sleep-mode check of engine Deployment %s iterates its empty command and fails: the engine is never added", v, d.Name))
		case canSleep(d) && !sees && rows != nil && !readsNothing(rows, v, mode):
			problems = append(problems, fmt.Sprintf("engine Deployment %s runs --enable-sleep-mode, and router %v does not see it (command %q): it keeps sending requests to the sleeping engine", d.Name, v, c.Command))
		}
	}
	return problems
}

func readsNothing(rows []sleepDetection, v upVersion, mode string) bool {
	return slices.ContainsFunc(rows, func(r sleepDetection) bool { return r.mode == mode && v.in(r.first, r.last) && r.reads == "none" })
}

// TestRouterSleepModeContract renders a stack with and without an engine
// that can sleep, with each discovery mode, at every router release, and
// holds the router's Role and its view of sleep mode to the facts
// (checkDiscovery): the Role grants exactly what the release calls, and
// the release sees --enable-sleep-mode where it reads it.
func TestRouterSleepModeContract(t *testing.T) {
	checked := 0
	for _, router := range stacktest.RouterReleases {
		v, err := parseUpVersion(router)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []string{"pod-ip", "service-name"} {
			for _, extra := range [][]any{nil, {"--enable-sleep-mode"}, {"--max-num-seqs=8", "--enable-sleep-mode"}} {
				xr := with("models", []any{
					map[string]any{"name": "a", "modelURL": "org/a", "vllmConfig": map[string]any{"extraArgs": extra}},
					map[string]any{"name": "b", "modelURL": "org/b"},
				}, "model", nil)
				if mode == "service-name" {
					stacktest.SetPath(xr, "spec.routerConfig.k8sServiceDiscoveryType", mode)
				}
				pinVersions(xr, "0.10.2", router)
				rsp := reconciled(t, xr, nil)
				name := fmt.Sprintf("router %s, %s, extraArgs %q", router, mode, extra)
				if rsp.refusal != "" {
					if !namesVersion(rsp.refusal, routerTag(router)) {
						t.Errorf("%s: refused without naming the router release: %s", name, rsp.refusal)
					}
					continue
				}
				r := renderedOf(rsp)
				routers := r.withComponent(names.ComponentRouter)
				if len(routers) != 1 {
					t.Fatalf("%s: %d routers", name, len(routers))
				}
				rd := routers[0]
				checked++
				for _, p := range checkDiscovery(v, rd.Spec.Template.Spec.Containers[0], r.rulesOf(rd.Spec.Template.Spec.ServiceAccountName), r.engineServices(), r.withContainer(build.EngineContainer)) {
					t.Errorf("%s: %s", name, p)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("nothing was checked")
	}
}
