package stack

import (
	"cmp"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// The behaviour half of the contract: what a release does with what it
// parses. A pod that starts and ignores a setting passes only if the
// function warned about it; one that cannot start (no LMCache in the image)
// fails. Facts: testdata/upstream/release-behaviour.tsv and ../upstream/vllm_envs.tsv.

// behaviourFacts are the two tables the behaviour checks read.
type behaviourFacts struct {
	facts     upTable
	envs      map[string][][2]upVersion // VLLM_* variable -> releases declaring it
	snapshots []upVersion               // the releases vllm_envs.tsv examined
}

func loadBehaviourFacts(t *testing.T) behaviourFacts {
	t.Helper()
	facts, err := loadFlagTable("release-behaviour.tsv")
	if err != nil {
		t.Fatal(err)
	}
	b := behaviourFacts{facts: facts, envs: map[string][][2]upVersion{}}
	data, err := os.ReadFile("../upstream/vllm_envs.tsv")
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if rest, ok := strings.CutPrefix(line, "#   snapshot "); ok {
			r, err := parseUpVersion(strings.Fields(rest)[0])
			if err != nil {
				t.Fatalf("vllm_envs.tsv line %d: %v", i+1, err)
			}
			b.snapshots = append(b.snapshots, r)
		}
		if i == 0 || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		first, err1 := parseUpVersion(f[1])
		last, err2 := parseUpVersion(f[2])
		if len(f) != 4 || err1 != nil || err2 != nil {
			t.Fatalf("vllm_envs.tsv line %d: %q", i+1, line)
		}
		b.envs[f[0]] = append(b.envs[f[0]], [2]upVersion{first, last})
	}
	return b
}

func (b behaviourFacts) holds(fact string, v upVersion) bool {
	_, ok := b.facts.at(fact, v)
	return ok
}

// reads reports whether vLLM release v, a snapshot of vllm_envs.tsv,
// declares a variable.
func (b behaviourFacts) reads(name string, v upVersion) bool {
	for _, r := range b.envs[name] {
		if v.in(r[0], r[1]) {
			return true
		}
	}
	return false
}

func warned(warnings []string, parts ...string) bool {
	return slices.ContainsFunc(warnings, func(w string) bool {
		for _, p := range parts {
			if !strings.Contains(w, p) {
				return false
			}
		}
		return true
	})
}

// userEnvNames are the env names a stack sets itself (spec.env and
// models[].env): the function passes them through, and warns about them.
func userEnvNames(xr map[string]any) map[string]bool {
	names := map[string]bool{}
	add := func(block map[string]any) {
		list, _ := block["env"].([]any)
		for _, e := range list {
			if m, ok := e.(map[string]any); ok {
				if n, ok := m["name"].(string); ok {
					names[n] = true
				}
			}
		}
	}
	spec := xr["spec"].(map[string]any)
	add(spec)
	models, _ := spec["models"].([]any)
	for _, m := range models {
		if m, ok := m.(map[string]any); ok {
			add(m)
		}
	}
	return names
}

var (
	stockImage   = regexp.MustCompile(`(^|/)vllm/vllm-openai(:|@|$)`)
	lmcacheTag   = regexp.MustCompile(`(^|/)lmcache/vllm-openai:v?(\d+\.\d+\.\d+)([^@]*)`)
	chunkedOffRE = regexp.MustCompile(`^(--no-enable-chunked-prefill|--enable-chunked-prefill=(?i:false))$`)
)

// checkBehaviour checks a stack's objects, rendered for vLLM release vllm
// and router release router, and the warnings the function gave.
func (b behaviourFacts) checkBehaviour(r rendered, vllm, router string, warnings []string, userEnv map[string]bool) []string {
	v, err := parseUpVersion(vllm)
	if err != nil {
		return []string{err.Error()}
	}
	var problems []string
	report := func(object, format string, a ...any) {
		problems = append(problems, object+": "+fmt.Sprintf(format, a...))
	}
	routerLMCache := b.routerLMCache(r, router)
	for _, d := range r.withContainer(build.EngineContainer) {
		c, _ := containerNamed(d, build.EngineContainer)
		object := "Deployment " + d.Name + " container vllm"
		v0 := envValue(c.Env, "VLLM_USE_V1") == "0"
		// Either LMCache connector loads LMCache (NixlConnector does not).
		cfg, _ := stacktest.ArgValue(c.Args, "--kv-transfer-config")
		lmcache := strings.Contains(cfg, `"LMCacheConnector`)
		if lmcache && stockImage.MatchString(c.Image) && !b.holds("vllm:lmcache-in-image", v) {
			report(object, "image %s has no LMCache (vLLM's images contain it %s), and --kv-transfer-config loads it", c.Image, b.facts.releases("vllm:lmcache-in-image"))
		}
		if strings.Contains(cfg, `"LMCacheConnector"`) && stockImage.MatchString(c.Image) {
			report(object, "LMCacheConnector imports lmcache.experimental, which the LMCache of no vllm/vllm-openai image has")
		}
		if !v0 && b.holds("vllm:v1-forces-chunked-prefill", v) && slices.ContainsFunc(c.Args, chunkedOffRE.MatchString) && !warned(warnings, "enableChunkedPrefill false has no effect") {
			report(object, "chunked prefill off is ignored by the V1 engine of vLLM %s, and no warning says so", v)
		}
		if envValue(c.Env, "VLLM_RPC_TIMEOUT") != "" && !(v0 && b.holds("vllm:v0-engine-reads-rpc-timeout", v)) {
			report(object, "env VLLM_RPC_TIMEOUT is read only by the V0 engine (VLLM_USE_V1=0, vLLM %s)", b.facts.releases("vllm:v0-engine-reads-rpc-timeout"))
		}
		if cfg != "" && strings.Contains(envValue(c.Env, "PYTORCH_CUDA_ALLOC_CONF"), "expandable_segments:True") && b.holds("vllm:kv-connector-refuses-expandable-segments", v) &&
			!slices.Contains(c.Args, "--enable-cumem-allocator") && !slices.Contains(c.Args, "--enable-sleep-mode") {
			report(object, "vLLM %s refuses to start with --kv-transfer-config and PYTORCH_CUDA_ALLOC_CONF expandable_segments:True without the cumem allocator", v)
		}
		problems = append(problems, b.checkVLLMEnvNames(object, v, c.Env, warnings, userEnv)...)
		if routerLMCache != "" && lmcacheTrue(envValue(c.Env, "LMCACHE_ENABLE_CONTROLLER")) {
			if m := lmcacheTag.FindStringSubmatch(c.Image); (m == nil || !sameLMCache(m[2]+m[3], routerLMCache)) && !warned(warnings, c.Image, "LMCache "+routerLMCache) {
				report(object, "image %s is not known to run the router's LMCache %s, and no warning says so", c.Image, routerLMCache)
			}
		}
	}
	return append(problems, b.checkDrain(r, v, router, warnings)...)
}

// checkVLLMEnvNames: every VLLM_* variable the function renders is one the
// release reads; one the stack sets that the release does not read is
// passed through with a warning.
func (b behaviourFacts) checkVLLMEnvNames(object string, v upVersion, env []corev1.EnvVar, warnings []string, userEnv map[string]bool) []string {
	if !slices.Contains(b.snapshots, v) {
		return []string{fmt.Sprintf("%s: vLLM %s is no snapshot of vllm_envs.tsv: add it (hack/vllm-envs.sh)", object, v)}
	}
	var problems []string
	for _, e := range env {
		if !strings.HasPrefix(e.Name, "VLLM_") || b.reads(e.Name, v) {
			continue
		}
		switch {
		case !userEnv[e.Name]:
			problems = append(problems, fmt.Sprintf("%s: env %s is not read by vLLM %s (vllm_envs.tsv)", object, e.Name, v))
		case !warned(warnings, "env "+e.Name+" has no effect"):
			problems = append(problems, fmt.Sprintf("%s: env %s is not read by vLLM %s, and no warning says so", object, e.Name, v))
		}
	}
	return problems
}

// sameLMCache compares two LMCache releases by number: a post release or an
// image variant (0.3.9post2, 0.3.12-lightweight) is its release.
func sameLMCache(a, b string) bool {
	n := regexp.MustCompile(`^\d+\.\d+\.\d+`)
	return n.FindString(a) == n.FindString(b)
}

// routerLMCache is the LMCache release of a kvaware router, "" otherwise.
func (b behaviourFacts) routerLMCache(r rendered, router string) string {
	routers := r.withComponent(names.ComponentRouter)
	if len(routers) != 1 {
		return ""
	}
	if logic, _ := stacktest.ArgValue(routers[0].Spec.Template.Spec.Containers[0].Args, "--routing-logic"); logic != "kvaware" {
		return ""
	}
	rv, err := parseUpVersion(router)
	if err != nil {
		return ""
	}
	for _, row := range b.facts {
		if name, ok := strings.CutPrefix(row.name, "router:lmcache="); ok && rv.in(row.first, row.last) {
			return name
		}
	}
	return ""
}

// behaviourStack is one engine Deployment "s-m-deployment-vllm" with a
// container c and a router Deployment with routing logic logic.
func behaviourStack(c corev1.Container, logic string) rendered {
	deployment := func(component string, c corev1.Container) appsv1.Deployment {
		d := appsv1.Deployment{}
		d.Name = "s-" + component
		d.Spec.Template.Labels = map[string]string{names.LabelComponent: component}
		d.Spec.Template.Spec.Containers = []corev1.Container{c}
		return d
	}
	engine := deployment("m-deployment-vllm", c)
	// A pod that drains (checkDrain's own cases test that).
	engine.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To(int64(55))
	return rendered{deployments: []appsv1.Deployment{engine, deployment(names.ComponentRouter, container("router", routerArgsWith(logic)))}}
}

// TestContractBehaviourChecks: each check finds the defect it is for, as
// the function rendered it before it knew the fact (commit 627da2b), and
// passes objects that are right or warned about.
func TestContractBehaviourChecks(t *testing.T) {
	b := loadBehaviourFacts(t)
	const object = "Deployment s-m-deployment-vllm container vllm: "
	engine := func(image string, args []string, env ...corev1.EnvVar) corev1.Container {
		c := container(build.EngineContainer, engineArgsWith(args...), env...)
		c.Image = image
		return c
	}
	lmcacheArgs := []string{"--kv-transfer-config", kvV1}
	cases := map[string]struct {
		c        corev1.Container
		logic    string
		vllm     string
		router   string
		warnings []string
		userEnv  map[string]bool
		want     []string
	}{
		"LMCacheInStockImage085": {c: engine("docker.io/vllm/vllm-openai:v0.8.5", lmcacheArgs), vllm: "0.8.5",
			want: []string{object + "image docker.io/vllm/vllm-openai:v0.8.5 has no LMCache (vLLM's images contain it only in 0.9.2–0.22.0), and --kv-transfer-config loads it"}},
		"LMCacheInStockImage092":   {c: engine("docker.io/vllm/vllm-openai:v0.9.2", lmcacheArgs), vllm: "0.9.2"},
		"LMCacheInLMCacheImage085": {c: engine("docker.io/lmcache/vllm-openai:2025-04-18", lmcacheArgs), vllm: "0.8.5"},
		"V0ConnectorInStockImage": {c: engine("docker.io/vllm/vllm-openai:v0.9.2", []string{"--kv-transfer-config", kvV0}, envVar("VLLM_USE_V1", "0")), vllm: "0.9.2",
			want: []string{object + "LMCacheConnector imports lmcache.experimental, which the LMCache of no vllm/vllm-openai image has"}},
		"ChunkedPrefillOffV1Unwarned": {c: engine("docker.io/vllm/vllm-openai:v0.10.2", []string{"--no-enable-chunked-prefill"}), vllm: "0.10.2",
			want: []string{object + "chunked prefill off is ignored by the V1 engine of vLLM 0.10.2, and no warning says so"}},
		"ChunkedPrefillOffEqFalseV1Unwarned": {c: engine("docker.io/vllm/vllm-openai:v0.8.3", []string{"--enable-chunked-prefill=false"}), vllm: "0.8.3",
			want: []string{object + "chunked prefill off is ignored by the V1 engine of vLLM 0.8.3, and no warning says so"}},
		"ChunkedPrefillOffV1Warned": {c: engine("x", []string{"--no-enable-chunked-prefill"}), vllm: "0.11.0", warnings: []string{"spec.vllmConfig.enableChunkedPrefill false has no effect: …"}},
		"ChunkedPrefillOffV0":       {c: engine("x", []string{"--enable-chunked-prefill=false"}, envVar("VLLM_USE_V1", "0")), vllm: "0.8.3"},
		"ChunkedPrefillOffAt0120":   {c: engine("x", []string{"--no-enable-chunked-prefill"}), vllm: "0.12.0"},
		"RPCTimeoutOnV1": {c: engine("x", nil, envVar("VLLM_RPC_TIMEOUT", "1000000")), vllm: "0.10.2",
			want: []string{object + "env VLLM_RPC_TIMEOUT is read only by the V0 engine (VLLM_USE_V1=0, vLLM only in 0.8.3–0.10.2)"}},
		"RPCTimeoutOnV0": {c: engine("x", nil, envVar("VLLM_USE_V1", "0"), envVar("VLLM_RPC_TIMEOUT", "1000000")), vllm: "0.10.2"},
		"ExpandableSegmentsWithConnector": {c: engine("x", lmcacheArgs, envVar("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")), vllm: "0.22.0",
			want: []string{object + "vLLM 0.22.0 refuses to start with --kv-transfer-config and PYTORCH_CUDA_ALLOC_CONF expandable_segments:True without the cumem allocator"}},
		"ExpandableSegmentsWithCumem":  {c: engine("x", append(slices.Clone(lmcacheArgs), "--enable-cumem-allocator"), envVar("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")), vllm: "0.22.0"},
		"ExpandableSegmentsBefore0220": {c: engine("x", lmcacheArgs, envVar("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")), vllm: "0.20.0"},
		"RenderedVariableNotRead": {c: engine("x", nil, envVar("VLLM_USE_V1", "1")), vllm: "0.12.0",
			want: []string{object + "env VLLM_USE_V1 is not read by vLLM 0.12.0 (vllm_envs.tsv)"}},
		"UserVariableNotReadUnwarned": {c: engine("x", nil, envVar("VLLM_LOG_LEVEL", "INFO")), vllm: "0.8.3", userEnv: map[string]bool{"VLLM_LOG_LEVEL": true},
			want: []string{object + "env VLLM_LOG_LEVEL is not read by vLLM 0.8.3, and no warning says so"}},
		"UserVariableNotReadWarned": {c: engine("x", nil, envVar("VLLM_LOG_LEVEL", "INFO")), vllm: "0.8.3", userEnv: map[string]bool{"VLLM_LOG_LEVEL": true},
			warnings: []string{"spec.env VLLM_LOG_LEVEL has no effect: …"}},
		"ReleaseNotExamined": {c: engine("x", nil, envVar("VLLM_LOGGING_LEVEL", "INFO")), vllm: "0.17.0",
			want: []string{object + "vLLM 0.17.0 is no snapshot of vllm_envs.tsv: add it (hack/vllm-envs.sh)"}},
		"UserVariableRead": {c: engine("x", nil, envVar("VLLM_LOGGING_LEVEL", "INFO")), vllm: "0.8.3", userEnv: map[string]bool{"VLLM_LOGGING_LEVEL": true}},
		"KVAwareOtherLMCacheUnwarned": {c: engine("docker.io/lmcache/vllm-openai:v0.3.9post2", lmcacheArgs, controllerEnv()...), logic: "kvaware", vllm: "0.11.0", router: "0.1.12",
			want: []string{object + "image docker.io/lmcache/vllm-openai:v0.3.9post2 is not known to run the router's LMCache 0.3.11, and no warning says so"}},
		"KVAwareUnknownLMCacheUnwarned": {c: engine("docker.io/vllm/vllm-openai:v0.10.2", lmcacheArgs, controllerEnv()...), logic: "kvaware", vllm: "0.10.2", router: "HEAD",
			want: []string{object + "image docker.io/vllm/vllm-openai:v0.10.2 is not known to run the router's LMCache 0.3.11, and no warning says so"}},
		"KVAwareOtherLMCacheWarned": {c: engine("docker.io/lmcache/vllm-openai:v0.3.9post2", lmcacheArgs, controllerEnv()...), logic: "kvaware", vllm: "0.11.0", router: "0.1.11",
			warnings: []string{"spec.vllmConfig.image docker.io/lmcache/vllm-openai:v0.3.9post2 runs LMCache 0.3.9post2, and router 0.1.11 runs LMCache 0.3.11 for kvaware: …"}},
		"KVAwareSameLMCache":        {c: engine("docker.io/lmcache/vllm-openai:v0.3.9post2", lmcacheArgs, controllerEnv()...), logic: "kvaware", vllm: "0.11.0", router: "0.1.8"},
		"SameLMCacheWithoutKVAware": {c: engine("docker.io/lmcache/vllm-openai:v0.5.4", lmcacheArgs), logic: "roundrobin", vllm: "0.11.0", router: "0.1.12"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			router := cmp.Or(tc.router, "0.1.12")
			got := b.checkBehaviour(behaviourStack(tc.c, cmp.Or(tc.logic, "roundrobin")), tc.vllm, router, tc.warnings, tc.userEnv)
			if diff := gocmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}
