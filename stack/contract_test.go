package stack

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// TestContract renders every stack for every pair of vLLM and router
// release and checks what it renders against what those releases accept
// (testdata/upstream), and that what a release would ignore is warned about
// (release-behaviour.tsv, vllm_envs.tsv). The function may refuse a pair, if its Fatal message
// names the release it refuses.
func TestContract(t *testing.T) {
	u, b := loadUpstream(t), loadBehaviourFacts(t)
	for _, path := range stacktest.Stacks(t) {
		t.Run(strings.ReplaceAll(strings.TrimPrefix(path, "../"), "/", "_"), func(t *testing.T) {
			checked := 0
			for _, vllm := range stacktest.VLLMReleases {
				for _, router := range stacktest.RouterReleases {
					if contractRender(t, u, b, path, vllm, router) {
						checked++
					}
				}
			}
			if checked == 0 {
				t.Errorf("every pair of releases was refused: nothing was checked")
			}
		})
	}
}

// contractRender renders one stack for one pair of releases and reports
// every problem; it returns whether the stack was rendered.
func contractRender(t *testing.T, u contractFacts, bf behaviourFacts, path, vllm, router string) bool {
	t.Helper()
	xr := stacktest.LoadXR(t, path, "")
	pinVersions(xr, vllm, router)
	b := reconciled(t, xr, stacktest.InputFor(xr))
	if msg := b.refusal; msg != "" {
		if !namesVersion(msg, vllm) && !namesVersion(msg, routerTag(router)) {
			t.Errorf("vLLM %s, router %s: refused without naming the release it refuses: %s", vllm, router, msg)
		} else {
			t.Logf("vLLM %s, router %s: refused: %s", vllm, router, msg)
		}
		return false
	}
	r := renderedOf(b)
	for _, p := range u.check(r, vllm, router, extraArgsOf(xr)) {
		t.Errorf("vLLM %s, router %s: %s", vllm, router, p)
	}
	for _, p := range bf.checkBehaviour(r, vllm, router, b.warnings, userEnvNames(xr)) {
		t.Errorf("vLLM %s, router %s: %s", vllm, router, p)
	}
	return true
}

// vllmReleaseTag is a tag of vllm/vllm-openai that names a release.
var vllmReleaseTag = regexp.MustCompile(`^v?\d+\.\d+\.\d+(\.\d+)?$`)

// pinVersions makes a stack run vLLM release vllm and router release router
// the ways users say so: the tag of a vllm/vllm-openai image, else
// vllmConfig.engineVersion; the tag of the router image.
func pinVersions(xr map[string]any, vllm, router string) {
	spec := xr["spec"].(map[string]any)
	pinVLLM(spec, vllm)
	models, _ := spec["models"].([]any)
	for _, m := range models {
		m := m.(map[string]any)
		if vc, ok := m["vllmConfig"].(map[string]any); ok && vc["image"] != nil {
			pinVLLM(m, vllm)
		}
	}
	stacktest.SetPath(xr, "spec.routerConfig.image", "lmcache/lmstack-router:"+routerTag(router))
}

// pinVLLM pins the vllmConfig of an engine block (spec or spec.models[i]).
func pinVLLM(block map[string]any, ver string) {
	vc, ok := block["vllmConfig"].(map[string]any)
	if !ok {
		vc = map[string]any{}
		block["vllmConfig"] = vc
	}
	if image, _ := vc["image"].(string); image != "" {
		i := strings.LastIndex(image, ":")
		if i > strings.LastIndex(image, "/") && strings.HasSuffix(image[:i], "vllm/vllm-openai") && vllmReleaseTag.MatchString(image[i+1:]) {
			vc["image"] = image[:i] + ":v" + ver
		}
	}
	vc["engineVersion"] = ver
}

// routerTag is the router image tag of a release: HEAD is what latest runs.
func routerTag(router string) string {
	if router == "HEAD" {
		return "latest"
	}
	return "v" + router
}

// namesVersion reports whether a message names a release, as a whole
// number: "0.1.1" is not named by "0.1.12".
func namesVersion(msg, ver string) bool {
	return regexp.MustCompile(`(^|[^0-9.])v?` + regexp.QuoteMeta(ver) + `($|[^0-9.]|\.($|[^0-9]))`).MatchString(msg)
}

// extraArgsOf reads a stack's extraArgs: a model's vllmConfig.extraArgs
// replace the top level's (MergeConfig replaces lists).
func extraArgsOf(xr map[string]any) stackExtraArgs {
	spec := xr["spec"].(map[string]any)
	x := stackExtraArgs{engines: map[string][]string{"": stringsAt(spec, "vllmConfig", "extraArgs")}, router: stringsAt(spec, "routerConfig", "extraArgs")}
	models, _ := spec["models"].([]any)
	for _, m := range models {
		m := m.(map[string]any)
		if vc, ok := m["vllmConfig"].(map[string]any); ok && vc["extraArgs"] != nil {
			x.engines[m["name"].(string)] = stringsAt(m, "vllmConfig", "extraArgs")
		}
	}
	return x
}

func stringsAt(m map[string]any, block, field string) []string {
	b, _ := m[block].(map[string]any)
	list, _ := b[field].([]any)
	var out []string
	for _, s := range list {
		out = append(out, s.(string))
	}
	return out
}

// TestContractCatchesKnownDefects runs the checks on objects the function
// rendered before it knew releases apart (testdata/upstream/old, from the
// goldens of commit b0045a6): each known defect must be found, exactly, and
// objects that are right for a release must pass.
func TestContractCatchesKnownDefects(t *testing.T) {
	u := loadUpstream(t)
	const (
		seedEngine  = "Deployment test-stack-llama-3-2-1b-instruct-deployment-vllm container vllm: "
		cachedV1    = "Deployment cached-llama3-deployment-vllm container vllm: "
		kv8b        = "Deployment kv-llama3-deployment-vllm container vllm: "
		kv70b       = "Deployment kv-llama3-70b-deployment-vllm container vllm: "
		chatRouter  = "Deployment chat-deployment-router container router: "
		cacheServer = "Deployment full-deployment-cache-server container lmcache-server: "
	)
	kvEnv := []string{
		"env LMCACHE_CONTROLLER_URL is not read by current LMCache",
		"env LMCACHE_LMCACHE_WORKER_PORT is not read by current LMCache",
		"env LMCACHE_CONTROLLER_REPLY_URL must be set with LMCACHE_ENABLE_CONTROLLER true",
		"env LMCACHE_LMCACHE_WORKER_HEARTBEAT_TIME must be set with LMCACHE_ENABLE_CONTROLLER true",
	}
	// The controller names mid-2025 LMCache may not read (lmcache-env.tsv).
	kvEnvMid2025 := []string{
		"env LMCACHE_CONTROLLER_PULL_URL is not known to be read by mid-2025 LMCache (image docker.io/lmcache/vllm-openai:2025-05-27-v1)",
		"env LMCACHE_LMCACHE_WORKER_PORTS is not known to be read by mid-2025 LMCache (image docker.io/lmcache/vllm-openai:2025-05-27-v1)",
	}
	cases := map[string]struct {
		fixture, stack string // the objects, and the stack they were rendered from
		vllm, router   string
		engineImage    string // replaces the engines' image, if set
		want           []string
	}{
		"SeedNoChunkedPrefillBefore085": {
			fixture: "seed.yaml", stack: "../example/xr.yaml", vllm: "0.8.3", router: "0.1.12",
			want: []string{seedEngine + "--no-enable-chunked-prefill does not exist in vLLM 0.8.3: --enable-chunked-prefill is not a BooleanOptionalAction there"},
		},
		"SeedRightAt085": {fixture: "seed.yaml", stack: "../example/xr.yaml", vllm: "0.8.5", router: "0.1.12"},
		"SeedV0EngineGoneAt0110": {
			fixture: "seed.yaml", stack: "../example/xr.yaml", vllm: "0.11.0", router: "0.1.12",
			want: []string{seedEngine + "env VLLM_USE_V1=0 is wrong for vLLM 0.11.0 (read with that value only in 0.8.3–0.10.2)"},
		},
		"LMCacheConnectorV1Before085": {
			fixture: "lmcache.yaml", stack: "../example/stacks/lmcache.yaml", vllm: "0.8.3", router: "0.1.12",
			want: []string{cachedV1 + "--kv-transfer-config kv_connector LMCacheConnectorV1 is not registered in vLLM 0.8.3 (only in 0.8.5–0.27.1)"},
		},
		"LMCacheUseV1NotReadAt0220": {fixture: "lmcache.yaml", stack: "../example/stacks/lmcache.yaml", vllm: "0.22.0", router: "0.1.12",
			want: []string{cachedV1 + "env VLLM_USE_V1=1 is wrong for vLLM 0.22.0 (read with that value only in 0.8.3–0.11.0)"},
		},
		"LMCacheConnectorGoneAt0110": {
			fixture: "lmcache-v0.yaml", stack: "../example/stacks/lmcache.yaml", vllm: "0.11.0", router: "HEAD",
			want: []string{
				cachedV1 + "--kv-transfer-config kv_connector LMCacheConnector is not registered in vLLM 0.11.0 (only in 0.8.3–0.10.0)",
				cachedV1 + "env VLLM_USE_V1=0 is wrong for vLLM 0.11.0 (read with that value only in 0.8.3–0.10.2)",
			},
		},
		"LMCacheConnectorRightAt083": {fixture: "lmcache-v0.yaml", stack: "../example/stacks/lmcache.yaml", vllm: "0.8.3", router: "HEAD"},
		"CacheServerV0Gone": {
			fixture: "full.yaml", stack: "../test/render/testdata/full.yaml", vllm: "0.22.0", router: "0.1.12",
			want: []string{cacheServer + "/opt/venv/bin/lmcache_v0_server is gone from current LMCache: run lmcache_server"},
		},
		"KVAwareControllerEnv": {
			fixture: "kvaware.yaml", stack: "../example/stacks/kvaware.yaml", vllm: "0.22.0", router: "0.1.12", engineImage: "lmcache/vllm-openai:latest",
			want: append(prefixed(kv8b, kvEnv), prefixed(kv70b, kvEnv)...),
		},
		// The same objects on their own image, the chart's of 2025-05-27:
		// its LMCache reads the old names, and may not read the new.
		"KVAwareControllerEnvMid2025": {
			fixture: "kvaware.yaml", stack: "../example/stacks/kvaware.yaml", vllm: "0.22.0", router: "0.1.12",
			want: append(prefixed(kv8b, kvEnvMid2025), prefixed(kv70b, kvEnvMid2025)...),
		},
		"ServiceNameDiscoveryRBACAndPort": {
			fixture: "service-name.yaml", stack: "../example/stacks/session.yaml", vllm: "0.22.0", router: "HEAD",
			want: []string{
				chatRouter + "router HEAD with service-name discovery calls endpoints get, and its Role does not grant it",
				chatRouter + "router HEAD with service-name discovery calls services get, and its Role does not grant it",
				chatRouter + "router HEAD with service-name discovery calls services watch, and its Role does not grant it",
				chatRouter + "its Role grants pods get, which router HEAD with service-name discovery never calls for this stack",
				chatRouter + "its Role grants pods patch, which router HEAD with service-name discovery never calls for this stack",
				chatRouter + "its Role grants pods watch, which router HEAD with service-name discovery never calls for this stack",
				chatRouter + "no --k8s-port (so 8000): engine Service chat-qwen2-5-7b-engine-service has no port 8000",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var r rendered
			for _, doc := range stacktest.LoadDocs(t, filepath.Join(stacktest.UpstreamDir, "old", tc.fixture)) {
				if err := r.add(doc); err != nil {
					t.Fatal(err)
				}
			}
			if tc.engineImage != "" {
				for _, d := range r.withContainer(build.EngineContainer) {
					d.Spec.Template.Spec.Containers[0].Image = tc.engineImage
				}
			}
			got := u.check(r, tc.vllm, tc.router, extraArgsOf(stacktest.LoadXR(t, tc.stack, "")))
			want := tc.want
			if d, ok := podIPRouters[tc.fixture]; ok {
				// The old renders granted the chart's pod verbs: list
				// and patch, which the router never calls for them.
				release := tc.router
				want = append([]string{
					"Deployment " + d + " container router: its Role grants pods list, which router " + release + " with pod-ip discovery never calls for this stack",
					"Deployment " + d + " container router: its Role grants pods patch, which router " + release + " with pod-ip discovery never calls for this stack",
				}, want...)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("problems of %s at vLLM %s, router %s (-want +got):\n%s", tc.fixture, tc.vllm, tc.router, diff)
			}
		})
	}
}

// podIPRouters are the router Deployments of the old renders with pod-ip
// discovery, by fixture.
var podIPRouters = map[string]string{
	"seed.yaml": "test-stack-deployment-router", "lmcache.yaml": "cached-deployment-router", "lmcache-v0.yaml": "cached-deployment-router",
	"full.yaml": "full-deployment-router", "kvaware.yaml": "kv-deployment-router",
}

func prefixed(prefix string, ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = prefix + p
	}
	return out
}

func container(name string, args []string, env ...corev1.EnvVar) corev1.Container {
	return corev1.Container{Name: name, Args: args, Env: env}
}

func engineArgsWith(extra ...string) []string {
	return append([]string{"org/m", "--host", "0.0.0.0", "--port", "8000"}, extra...)
}

func envVar(name, value string) corev1.EnvVar { return corev1.EnvVar{Name: name, Value: value} }

const (
	kvV1 = `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`
	kvV0 = `{"kv_connector":"LMCacheConnector","kv_role":"kv_both"}`
)

// controllerEnv is what current LMCache needs to register with the
// controller in router Service "s-router-service".
func controllerEnv() []corev1.EnvVar {
	return []corev1.EnvVar{
		envVar("LMCACHE_ENABLE_CONTROLLER", "True"),
		envVar("LMCACHE_LMCACHE_INSTANCE_ID", "$(POD_NAME)"),
		envVar("LMCACHE_CONTROLLER_PULL_URL", "s-router-service:9000"),
		envVar("LMCACHE_CONTROLLER_REPLY_URL", "s-router-service:9001"),
		envVar("LMCACHE_LMCACHE_WORKER_PORTS", "8001"),
		envVar("LMCACHE_LMCACHE_WORKER_HEARTBEAT_TIME", "10"),
	}
}

func TestContractCheckEngine(t *testing.T) {
	u := loadUpstream(t)
	everything := engineArgsWith("--served-model-name", "a", "b", "--enable-lora", "--enable-auto-tool-choice",
		"--tool-call-parser", "hermes", "--chat-template", "/templates/t.jinja", "--trust-remote-code", "--dtype", "bfloat16",
		"--max-num-seqs", "8", "--max-model-len", "1024", "--no-enable-chunked-prefill", "--no-enable-prefix-caching",
		"--tensor-parallel-size", "2", "--gpu-memory-utilization", "0.9", "--max-loras", "2", "--lora-modules", "sql=/data/sql", "x=/data/x",
		"--kv-transfer-config", kvV1, "--revision", "main", "--block-size=16")
	cases := map[string]struct {
		ver   string
		c     corev1.Container
		tp    string // --tensor-parallel-size, appended
		extra []string
		want  []string
	}{
		"EverythingRightAtNewest": {ver: "0.27.1", c: container("vllm", everything,
			append(controllerEnv(), envVar("LMCACHE_USE_EXPERIMENTAL", "True"), envVar("LMCACHE_LOG_LEVEL", "INFO"), envVar("LMCACHE_MAX_LOCAL_CPU_SIZE", "4"))...),
			extra: []string{"--block-size=16"}},
		"ExtraArgsNotLast":     {ver: "0.22.0", c: container("vllm", engineArgsWith()), extra: []string{"--seed", "1"}, want: []string{`the stack's extraArgs ["--seed" "1"] are not the last arguments`}},
		"NoModel":              {ver: "0.22.0", c: container("vllm", []string{"--host", "0.0.0.0"}), want: []string{`the first argument of vllm serve must be the model, got ["--host" "0.0.0.0"]`}},
		"UnknownFlag":          {ver: "0.22.0", c: container("vllm", engineArgsWith("--seed", "16")), want: []string{"--seed is unknown to the contract table: add its row (from the upstream facts) before rendering it"}},
		"StrayValue":           {ver: "0.22.0", c: container("vllm", engineArgsWith("--enable-lora", "true")), want: []string{`argument "true" is a value no option takes`}},
		"MissingValue":         {ver: "0.22.0", c: container("vllm", engineArgsWith("--dtype", "--enable-lora")), want: []string{"--dtype needs a value"}},
		"BadChoice":            {ver: "0.22.0", c: container("vllm", engineArgsWith("--dtype=fp8")), want: []string{"--dtype fp8: vLLM 0.22.0 accepts only auto, half, float16, bfloat16, float, float32"}},
		"SwitchWithValue":      {ver: "0.22.0", c: container("vllm", engineArgsWith("--enable-prefix-caching=false")), want: []string{"--enable-prefix-caching=false: --enable-prefix-caching takes no value in vLLM 0.22.0 (boolopt)"}},
		"StoreBooleanEqFalse":  {ver: "0.8.3", c: container("vllm", engineArgsWith("--enable-chunked-prefill=false"))},
		"StoreBooleanSpace":    {ver: "0.8.4", c: container("vllm", engineArgsWith("--enable-chunked-prefill", "False", "--enable-lora"))},
		"StoreBooleanBadValue": {ver: "0.8.4", c: container("vllm", engineArgsWith("--enable-chunked-prefill=off")), want: []string{"--enable-chunked-prefill=off: --enable-chunked-prefill takes true or false in vLLM 0.8.4"}},
		"EqFalseFrom085":       {ver: "0.8.5", c: container("vllm", engineArgsWith("--enable-chunked-prefill=false")), want: []string{"--enable-chunked-prefill=false: --enable-chunked-prefill takes no value in vLLM 0.8.5 (boolopt)"}},
		"NoChunkedPrefill084":  {ver: "0.8.4", c: container("vllm", engineArgsWith("--no-enable-chunked-prefill")), want: []string{"--no-enable-chunked-prefill does not exist in vLLM 0.8.4: --enable-chunked-prefill is not a BooleanOptionalAction there"}},
		"NoLoRA085":            {ver: "0.8.5", c: container("vllm", engineArgsWith("--no-enable-lora"))},
		"NoTrustRemoteCode085": {ver: "0.8.5", c: container("vllm", engineArgsWith("--no-trust-remote-code")), want: []string{"--no-trust-remote-code does not exist in vLLM 0.8.5: --trust-remote-code is not a BooleanOptionalAction there"}},
		"ToolChoiceNoParser":   {ver: "0.22.0", c: container("vllm", engineArgsWith("--enable-auto-tool-choice")), want: []string{"--enable-auto-tool-choice needs --tool-call-parser"}},
		"V1ConnectorBefore085": {ver: "0.8.4", c: container("vllm", engineArgsWith("--kv-transfer-config", kvV1)), want: []string{"--kv-transfer-config kv_connector LMCacheConnectorV1 is not registered in vLLM 0.8.4 (only in 0.8.5–0.27.1)"}},
		"V1ConnectorAt0102":    {ver: "0.10.2", c: container("vllm", engineArgsWith("--kv-transfer-config", kvV1))},
		"V0ConnectorAt092":     {ver: "0.9.2", c: container("vllm", engineArgsWith("--kv-transfer-config", kvV0), envVar("VLLM_USE_V1", "0"))},
		"V0ConnectorGone":      {ver: "0.10.2", c: container("vllm", engineArgsWith("--kv-transfer-config", kvV0), envVar("VLLM_USE_V1", "0")), want: []string{"--kv-transfer-config kv_connector LMCacheConnector is not registered in vLLM 0.10.2 (only in 0.8.3–0.10.0)"}},
		"V0ConnectorNeedsV0":   {ver: "0.9.2", c: container("vllm", engineArgsWith("--kv-transfer-config", kvV0)), want: []string{"--kv-transfer-config kv_connector LMCacheConnector needs the V0 engine: env VLLM_USE_V1=0"}},
		"UnknownConnector":     {ver: "0.22.0", c: container("vllm", engineArgsWith("--kv-transfer-config", `{"kv_connector":"LMCache","kv_role":"kv_both"}`)), want: []string{"--kv-transfer-config kv_connector LMCache is not registered in vLLM 0.22.0 (in no release)"}},
		"NoKVRole":             {ver: "0.22.0", c: container("vllm", engineArgsWith("--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1"}`)), want: []string{`--kv-transfer-config kv_role "" must be one of kv_producer, kv_consumer, kv_both with kv_connector set`}},
		"KVNotJSON":            {ver: "0.22.0", c: container("vllm", engineArgsWith("--kv-transfer-config", "LMCacheConnectorV1")), want: []string{"--kv-transfer-config LMCacheConnectorV1 is not a JSON object: invalid character 'L' looking for beginning of value"}},
		"UseV1ZeroAt0102":      {ver: "0.10.2", c: container("vllm", engineArgsWith(), envVar("VLLM_USE_V1", "0"))},
		"NIXLRight":            {ver: "0.12.0", c: nixlContainer(`{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`, nixlTestEnv()...)},
		"NIXLImageWithoutNIXL": {ver: "0.10.0", c: nixlContainer(`{"kv_connector":"NixlConnector","kv_role":"kv_consumer"}`, nixlTestEnv()...), want: []string{"NixlConnector needs vLLM 0.10.2 or later: the vllm/vllm-openai image of 0.10.0 has no NIXL"}},
		"NIXLKVBoth":           {ver: "0.23.0", c: nixlContainer(`{"kv_connector":"NixlConnector","kv_role":"kv_both"}`, nixlTestEnv()...), want: []string{`NixlConnector kv_role "kv_both": a prefill engine is kv_producer and a decode engine kv_consumer (kv_both is deprecated from 0.23.0)`}},
		"NIXLOwnAddress":       {ver: "0.22.0", c: nixlContainer(`{"kv_connector":"NixlConnector","kv_role":"kv_producer","kv_port":14579}`, nixlTestEnv()...), want: []string{"NixlConnector: --kv-transfer-config sets kv_port, which vLLM makes or the NIXL path does not read"}},
		"NIXLLocalhost": {ver: "0.22.0", c: nixlContainer(`{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`, envVar("VLLM_NIXL_SIDE_CHANNEL_PORT", "5600")),
			want: []string{"NixlConnector: VLLM_NIXL_SIDE_CHANNEL_HOST must be the pod's IP (fieldRef status.podIP): the listener binds it and the decode engine dials it"}},
		"NIXLDefaultPort": {ver: "0.22.0", c: nixlContainer(`{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`, nixlTestEnv()[0]),
			want: []string{"NixlConnector: VLLM_NIXL_SIDE_CHANNEL_PORT must be set: its default moved from 5557 to 5600 at 0.11.0"}},
		"NIXLListenerPerRank": {ver: "0.11.0", c: nixlContainer(`{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`, nixlTestEnv()...), tp: "2",
			want: []string{"NixlConnector: vLLM 0.11.0 listens on side channel port 5601, not a container port"}},
		"NIXLOneListenerFrom0111": {ver: "0.11.1", c: nixlContainer(`{"kv_connector":"NixlConnector","kv_role":"kv_producer"}`, nixlTestEnv()...), tp: "2"},
		"UseV1OneAt0110":          {ver: "0.11.0", c: container("vllm", engineArgsWith(), envVar("VLLM_USE_V1", "1"))},
		"UseV1ZeroAt0110":         {ver: "0.11.0", c: container("vllm", engineArgsWith(), envVar("VLLM_USE_V1", "0")), want: []string{"env VLLM_USE_V1=0 is wrong for vLLM 0.11.0 (read with that value only in 0.8.3–0.10.2)"}},
		"UseV1NotReadAt0120":      {ver: "0.12.0", c: container("vllm", engineArgsWith(), envVar("VLLM_USE_V1", "1")), want: []string{"env VLLM_USE_V1=1 is wrong for vLLM 0.12.0 (read with that value only in 0.8.3–0.11.0)"}},
		"UseV1True":               {ver: "0.9.2", c: container("vllm", engineArgsWith(), envVar("VLLM_USE_V1", "true")), want: []string{"env VLLM_USE_V1=true is wrong for vLLM 0.9.2 (read with that value in no release)"}},
		"LMCacheUnknownEnv":       {ver: "0.22.0", c: container("vllm", engineArgsWith(), envVar("LMCACHE_FOO", "1")), want: []string{"env LMCACHE_FOO is unknown to the contract table lmcache-env.tsv"}},
		"LMCacheDroppedEnv":       {ver: "0.22.0", c: container("vllm", engineArgsWith(), envVar("LMCACHE_INSTANCE_ID", "x")), want: []string{"env LMCACHE_INSTANCE_ID is not read by current LMCache"}},
		"ControllerIncomplete": {ver: "0.22.0", c: container("vllm", engineArgsWith(), envVar("LMCACHE_ENABLE_CONTROLLER", "true"), envVar("LMCACHE_LMCACHE_WORKER_PORTS", "")), want: []string{
			"env LMCACHE_CONTROLLER_PULL_URL must be set with LMCACHE_ENABLE_CONTROLLER true",
			"env LMCACHE_CONTROLLER_REPLY_URL must be set with LMCACHE_ENABLE_CONTROLLER true",
			"env LMCACHE_LMCACHE_INSTANCE_ID must be set with LMCACHE_ENABLE_CONTROLLER true",
			"env LMCACHE_LMCACHE_WORKER_HEARTBEAT_TIME must be set with LMCACHE_ENABLE_CONTROLLER true",
			"env LMCACHE_LMCACHE_WORKER_PORTS must be set with LMCACHE_ENABLE_CONTROLLER true",
		}},
		"ControllerOff": {ver: "0.22.0", c: container("vllm", engineArgsWith(), envVar("LMCACHE_ENABLE_CONTROLLER", "False"))},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.tp != "" {
				tc.c.Args = append(tc.c.Args, "--tensor-parallel-size", tc.tp)
			}
			if diff := cmp.Diff(tc.want, u.checkEngine(tc.ver, tc.c, tc.extra)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func routerArgsWith(logic string, extra ...string) []string {
	return append([]string{"--host", "0.0.0.0", "--port", "8000", "--service-discovery", "k8s", "--k8s-namespace", "llm",
		"--k8s-label-selector", "app.kubernetes.io/instance=s,app.kubernetes.io/component=serving-engine", "--routing-logic", logic}, extra...)
}

func TestContractCheckRouter(t *testing.T) {
	u := loadUpstream(t)
	cases := map[string]struct {
		ver   string
		c     corev1.Container
		extra []string
		want  []string
	}{
		"RoundRobinAt010":  {ver: "0.1.0", c: container("router", routerArgsWith("roundrobin", "--engine-stats-interval", "15", "--request-stats-window", "60"))},
		"KVAwareAtHead":    {ver: "HEAD", c: container("router", routerArgsWith("kvaware", "--session-key", "x", "--lmcache-controller-port", "9000", "--lmcache-controller-reply-port", "9001", "--kv-aware-threshold", "1000"))},
		"ExtraArgsSkipped": {ver: "0.1.0", c: container("router", routerArgsWith("roundrobin", "--whatever", "1")), extra: []string{"--whatever", "1"}},
		"KVAwareAt012": {ver: "0.1.2", c: container("router", routerArgsWith("kvaware", "--session-key", "x", "--lmcache-controller-port", "9000")), want: []string{
			"--routing-logic kvaware: router 0.1.2 accepts only roundrobin, session",
			"--lmcache-controller-port does not exist in router 0.1.2 (only in 0.1.3–HEAD)",
		}},
		"ReplyPortBefore0111": {ver: "0.1.10", c: container("router", routerArgsWith("kvaware", "--session-key", "x", "--lmcache-controller-reply-port", "9001")), want: []string{"--lmcache-controller-reply-port does not exist in router 0.1.10 (only in 0.1.11–HEAD)"}},
		"DiscoveryTypeAt016":  {ver: "0.1.6", c: container("router", routerArgsWith("roundrobin", "--k8s-service-discovery-type", "service-name")), want: []string{"--k8s-service-discovery-type does not exist in router 0.1.6 (only in 0.1.7–HEAD)"}},
		"BadDiscoveryType":    {ver: "0.1.12", c: container("router", routerArgsWith("roundrobin", "--k8s-service-discovery-type", "dns")), want: []string{"--k8s-service-discovery-type dns: router 0.1.12 accepts only pod-ip, service-name"}},
		"SessionWithoutKey":   {ver: "0.1.12", c: container("router", routerArgsWith("session")), want: []string{"--routing-logic session needs --session-key"}},
		"KVAwareWithoutKey":   {ver: "0.1.12", c: container("router", routerArgsWith("kvaware")), want: []string{"--routing-logic kvaware needs --session-key"}},
		"SwitchWithValue":     {ver: "0.1.12", c: container("router", routerArgsWith("roundrobin", "--log-stats=true")), want: []string{"--log-stats=true: --log-stats takes no value in router 0.1.12 (store_true)"}},
		"NoDiscoveryNoLogic":  {ver: "0.1.12", c: container("router", []string{"--port", "8000"}), want: []string{"--service-discovery is required", "--routing-logic is required"}},
		"Command": {ver: "0.1.12", c: corev1.Container{Name: "router", Command: []string{"vllm-router"}, Args: routerArgsWith("roundrobin")},
			want: []string{`command ["vllm-router"] replaces the image's entrypoint vllm-router`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, u.checkRouter(tc.ver, tc.c, tc.extra)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func rule(resources []string, verbs ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{APIGroups: []string{""}, Resources: resources, Verbs: verbs}
}

// nixlContainer is an engine of a disaggregated model with a NIXL
// --kv-transfer-config and its side channel's container port 5600.
func nixlContainer(kv string, env ...corev1.EnvVar) corev1.Container {
	c := container("vllm", engineArgsWith("--kv-transfer-config", kv), env...)
	c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}, {Name: "nixl", ContainerPort: 5600}}
	return c
}

// nixlTestEnv is the side channel's address: the pod's IP, port 5600.
func nixlTestEnv() []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "VLLM_NIXL_SIDE_CHANNEL_HOST", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
		envVar("VLLM_NIXL_SIDE_CHANNEL_PORT", "5600"),
	}
}

// TestContractCheckDisaggregatedRouting: the router's groups are the NIXL
// engines' model labels, by role, found by pod IP.
func TestContractCheckDisaggregatedRouting(t *testing.T) {
	engine := func(label, role string) appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "s-" + label + "-deployment-vllm"}}
		d.Spec.Template.Labels = map[string]string{names.LabelModel: label}
		d.Spec.Template.Spec.Containers = []corev1.Container{nixlContainer(`{"kv_connector":"NixlConnector","kv_role":"`+role+`"}`, nixlTestEnv()...)}
		return d
	}
	engines := []appsv1.Deployment{engine("m-prefill", "kv_producer"), engine("m-decode", "kv_consumer")}
	labels := []string{"--prefill-model-labels=m-prefill", "--decode-model-labels=m-decode"}
	const logic = "disaggregated_prefill_orchestrated"
	cases := map[string]struct {
		args []string
		want []string
	}{
		"Right":        {args: routerArgsWith(logic, labels...)},
		"RoundRobin":   {args: routerArgsWith("roundrobin"), want: []string{"engines use NixlConnector but --routing-logic is roundrobin: it needs disaggregated_prefill_orchestrated"}},
		"LMCacheLogic": {args: routerArgsWith("disaggregated_prefill", labels...), want: []string{"engines use NixlConnector but --routing-logic is disaggregated_prefill: it needs disaggregated_prefill_orchestrated"}},
		"ServiceName":  {args: routerArgsWith(logic, append(labels, "--k8s-service-discovery-type", "service-name")...), want: []string{"disaggregated_prefill_orchestrated needs pod-ip discovery: the router tells the groups apart by their pods' label model and names the prefill pod to the decode engine, got service-name"}},
		"NoDecodeFlag": {args: routerArgsWith(logic, labels[0]), want: []string{"disaggregated_prefill_orchestrated needs --decode-model-labels", "the kv_consumer engines labelled m-decode are not in --decode-model-labels: the router never sends them a request"}},
		"Swapped": {args: routerArgsWith(logic, "--prefill-model-labels=m-decode", "--decode-model-labels=m-prefill"), want: []string{
			"--prefill-model-labels names m-decode, which is not the model label of a NixlConnector kv_producer engine",
			"the kv_producer engines labelled m-prefill are not in --prefill-model-labels: the router never sends them a request",
			"--decode-model-labels names m-prefill, which is not the model label of a NixlConnector kv_consumer engine",
			"the kv_consumer engines labelled m-decode are not in --decode-model-labels: the router never sends them a request",
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := checkDisaggregatedRouting(container("router", tc.args), engines)
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
	// LMCache's NIXL backend needs disaggregated_prefill.
	lmcache := lmcachePDEngines()
	if got, want := checkDisaggregatedRouting(container("router", routerArgsWith("disaggregated_prefill", labels...)), lmcache), []string(nil); !cmp.Equal(want, got) {
		t.Errorf("LMCache engines, disaggregated_prefill: problems %q", got)
	}
	want := []string{"engines use LMCache's NIXL backend but --routing-logic is disaggregated_prefill_orchestrated: it needs disaggregated_prefill"}
	if got := checkDisaggregatedRouting(container("router", routerArgsWith(logic, labels...)), lmcache); !cmp.Equal(want, got) {
		t.Errorf("LMCache engines, orchestrated: problems %q, want %q", got, want)
	}
}

// lmcachePDEngines are a sender and a receiver of LMCache's NIXL backend, as
// transfer lmcache renders them, and the receiver's Service.
func lmcachePDEngines() []appsv1.Deployment {
	engine := func(label, kvRole, nixlRole, host string, ports ...corev1.ContainerPort) appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "s-" + label + "-deployment-vllm"}}
		d.Spec.Template.Labels = map[string]string{names.LabelModel: label, "app": label}
		d.Spec.Replicas = ptr.To[int32](1)
		c := container("vllm", engineArgsWith("--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1","kv_role":"`+kvRole+`","kv_connector_extra_config":{"discard_partial_chunks":false,"lmcache_rpc_port":"`+nixlRole+`"}}`),
			envVar("LMCACHE_ENABLE_NIXL", "True"), envVar("LMCACHE_NIXL_ROLE", nixlRole), envVar("LMCACHE_NIXL_RECEIVER_HOST", host), envVar("LMCACHE_NIXL_RECEIVER_PORT", "55555"),
			envVar("LMCACHE_NIXL_BUFFER_SIZE", "1073741824"), envVar("LMCACHE_NIXL_BUFFER_DEVICE", "cuda"))
		c.Image = "lmcache/vllm-openai:2025-05-27-v1"
		c.Ports = append([]corev1.ContainerPort{{Name: "container-port", ContainerPort: 8000}}, ports...)
		d.Spec.Template.Spec.Containers = []corev1.Container{c}
		return d
	}
	return []appsv1.Deployment{engine("m-prefill", "kv_producer", "sender", "s-m-decode-engine-service"),
		engine("m-decode", "kv_consumer", "receiver", "0.0.0.0", corev1.ContainerPort{Name: "zmq-port", ContainerPort: 55555})}
}

// TestContractCheckLMCacheTransfer: the roles agree, the buffer is set,
// the receiver listens on every interface on a container port, alone, and
// the sender reaches it through a Service port.
func TestContractCheckLMCacheTransfer(t *testing.T) {
	service := corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s-m-decode-engine-service"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "m-decode"},
		Ports:    []corev1.ServicePort{{Name: "service-port", Port: 80, TargetPort: intstr.FromInt(8000)}, {Name: "zmq-port", Port: 55555, TargetPort: intstr.FromString("zmq-port")}},
	}}
	const sender, receiver = "Deployment s-m-prefill-deployment-vllm: ", "Deployment s-m-decode-deployment-vllm: "
	setEnv := func(i int, name, value string) func([]appsv1.Deployment, *corev1.Service) {
		return func(ds []appsv1.Deployment, _ *corev1.Service) {
			c := &ds[i].Spec.Template.Spec.Containers[0]
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name })
			if value != "" {
				c.Env = append(c.Env, envVar(name, value))
			}
		}
	}
	cases := map[string]struct {
		change func([]appsv1.Deployment, *corev1.Service)
		want   []string
	}{
		"Right": {change: func([]appsv1.Deployment, *corev1.Service) {}},
		"RoleMismatch": {change: setEnv(0, "LMCACHE_NIXL_ROLE", "receiver"), want: []string{sender + `kv_role "kv_producer" with LMCACHE_NIXL_ROLE "receiver": a prefill engine is kv_producer and sender, a decode engine kv_consumer and receiver`,
			sender + "env LMCACHE_NIXL_RECEIVER_HOST=s-m-decode-engine-service: the receiver binds it, so it must be 0.0.0.0 for the senders to reach it",
			sender + "env LMCACHE_NIXL_RECEIVER_PORT=55555: the receiver listens there, and it is not a container port"}},
		"NoBufferSize":  {change: setEnv(1, "LMCACHE_NIXL_BUFFER_SIZE", ""), want: []string{receiver + "env LMCACHE_NIXL_BUFFER_SIZE must be set: LMCache's NIXL backend has no default"}},
		"ReceiverLocal": {change: setEnv(1, "LMCACHE_NIXL_RECEIVER_HOST", "localhost"), want: []string{receiver + "env LMCACHE_NIXL_RECEIVER_HOST=localhost: the receiver binds it, so it must be 0.0.0.0 for the senders to reach it"}},
		"ReceiverPortNotDeclared": {change: func(ds []appsv1.Deployment, _ *corev1.Service) {
			ds[1].Spec.Template.Spec.Containers[0].Ports = ds[1].Spec.Template.Spec.Containers[0].Ports[:1]
		},
			want: []string{receiver + "env LMCACHE_NIXL_RECEIVER_PORT=55555: the receiver listens there, and it is not a container port", sender + "Service s-m-decode-engine-service port 55555 reaches no receiver's listening port"}},
		"TwoReceivers": {change: func(ds []appsv1.Deployment, _ *corev1.Service) { ds[1].Spec.Replicas = ptr.To[int32](2) },
			want: []string{receiver + "2 receivers behind one Service: the sender's KV cache lands on any of them, the router decodes on one"}},
		"SenderToPod": {change: setEnv(0, "LMCACHE_NIXL_RECEIVER_HOST", "10.0.0.7"), want: []string{sender + "env LMCACHE_NIXL_RECEIVER_HOST=10.0.0.7 is not a Service of the stack"}},
		"NoServicePort": {change: func(_ []appsv1.Deployment, s *corev1.Service) { s.Spec.Ports = s.Spec.Ports[:1] },
			want: []string{sender + "env LMCACHE_NIXL_RECEIVER_PORT=55555: Service s-m-decode-engine-service has no such port"}},
		"ServiceSelectsOthers": {change: func(_ []appsv1.Deployment, s *corev1.Service) {
			s.Spec.Selector = map[string]string{"app": "m-prefill"}
		},
			want: []string{sender + "Service s-m-decode-engine-service port 55555 reaches no receiver's listening port"}},
		"DiscardsPartialChunk": {change: func(ds []appsv1.Deployment, _ *corev1.Service) {
			ds[0].Spec.Template.Spec.Containers[0].Args = engineArgsWith("--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_producer"}`)
		}, want: []string{sender + "kv_connector_extra_config.discard_partial_chunks must be false: the decode engine needs the prompt's last partial chunk too"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			engines, svc := lmcachePDEngines(), service
			svc.Spec.Ports = slices.Clone(service.Spec.Ports)
			tc.change(engines, &svc)
			got := checkLMCacheTransfer(engines, []corev1.Service{svc})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContractCheckDiscovery(t *testing.T) {
	engineLabels := map[string]string{names.LabelInstance: "s", names.LabelComponent: names.ComponentEngine, names.LabelName: "m"}
	svc := corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s-m-engine-service", Labels: engineLabels},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8000)}}}}
	engineWith := func(command []string, args []string) appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "s-m-deployment-vllm"}}
		d.Spec.Template.Labels = engineLabels
		c := container("vllm", args)
		c.Command = command
		d.Spec.Template.Spec.Containers = []corev1.Container{c}
		return d
	}
	eng := engineWith([]string{"vllm", "serve"}, engineArgsWith())
	// Sleep mode where router 0.1.6 on reads it, in the command, and where
	// it does not, in the args.
	sleeping := engineWith(append([]string{"vllm", "serve"}, engineArgsWith("--enable-sleep-mode")...), nil)
	sleepInArgs := engineWith([]string{"vllm", "serve"}, engineArgsWith("--enable-sleep-mode"))
	noCommand := engineWith(nil, engineArgsWith())
	allVerbs := []string{"get", "list", "watch", "patch"}
	chartServiceRole := []rbacv1.PolicyRule{rule([]string{"pods", "services", "endpoints"}, allVerbs...)}
	serviceRole := []rbacv1.PolicyRule{rule([]string{"pods"}, "list"), rule([]string{"services"}, "get", "watch"), rule([]string{"endpoints"}, "get")}
	podRole := []rbacv1.PolicyRule{rule([]string{"pods"}, "get", "watch")}
	sleepRole := []rbacv1.PolicyRule{rule([]string{"pods"}, "get", "watch", "patch")}
	cases := map[string]struct {
		ver    string
		args   []string
		rules  []rbacv1.PolicyRule
		engine appsv1.Deployment
		want   []string
	}{
		"PodIPRight":         {args: routerArgsWith("roundrobin"), rules: podRole},
		"PodIPExplicitPort":  {args: routerArgsWith("roundrobin", "--k8s-service-discovery-type", "pod-ip", "--k8s-port", "8000"), rules: podRole},
		"PodIPOldRouter":     {ver: "0.1.5", args: routerArgsWith("roundrobin"), rules: []rbacv1.PolicyRule{rule([]string{"pods"}, "watch")}},
		"PodIPOldRouterGets": {ver: "0.1.5", args: routerArgsWith("roundrobin"), rules: podRole, want: []string{"its Role grants pods get, which router 0.1.5 with pod-ip discovery never calls for this stack"}},
		"PodIPWildcardRole":  {args: routerArgsWith("roundrobin"), rules: []rbacv1.PolicyRule{rule([]string{"*"}, "*")}, want: []string{"its Role grants * *, which router 0.1.12 with pod-ip discovery never calls for this stack"}},
		"PodIPServicePort":   {args: routerArgsWith("roundrobin", "--k8s-port", "80"), rules: podRole, want: []string{"--k8s-port 80: the pods of engine Deployment s-m-deployment-vllm listen on 8000"}},
		"PodIPWatchOnly":     {args: routerArgsWith("roundrobin"), rules: []rbacv1.PolicyRule{rule([]string{"pods"}, "watch")}, want: []string{"router 0.1.12 with pod-ip discovery calls pods get, and its Role does not grant it"}},
		"PodIPChartRole": {args: routerArgsWith("roundrobin"), rules: []rbacv1.PolicyRule{rule([]string{"pods"}, allVerbs...)}, want: []string{
			"its Role grants pods list, which router 0.1.12 with pod-ip discovery never calls for this stack",
			"its Role grants pods patch, which router 0.1.12 with pod-ip discovery never calls for this stack"}},
		"PodIPOtherAPIGroup": {args: routerArgsWith("roundrobin"), rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"pods"}, Verbs: allVerbs}}, want: []string{
			"router 0.1.12 with pod-ip discovery calls pods get, and its Role does not grant it",
			"router 0.1.12 with pod-ip discovery calls pods watch, and its Role does not grant it"}},
		"SelectorMissesPods": {args: routerArgsWith("roundrobin", "--k8s-label-selector", "app=vllm"), rules: podRole, want: []string{`--k8s-label-selector "app=vllm" does not select the pods of engine Deployment s-m-deployment-vllm`}},
		"SleepRight":         {args: routerArgsWith("roundrobin"), rules: sleepRole, engine: sleeping},
		"SleepNoPatch":       {args: routerArgsWith("roundrobin"), rules: podRole, engine: sleeping, want: []string{"router 0.1.12 with pod-ip discovery calls pods patch, and its Role does not grant it"}},
		"SleepInArgs": {args: routerArgsWith("roundrobin"), rules: sleepRole, engine: sleepInArgs, want: []string{
			`engine Deployment s-m-deployment-vllm runs --enable-sleep-mode, and router 0.1.12 does not see it (command ["vllm" "serve"]): it keeps sending requests to the sleeping engine`}},
		"SleepOldRouter":   {ver: "0.1.5", args: routerArgsWith("roundrobin"), rules: []rbacv1.PolicyRule{rule([]string{"pods"}, "watch")}, engine: sleepInArgs},
		"NoCommandPodIP":   {args: routerArgsWith("roundrobin"), rules: podRole, engine: noCommand},
		"NoCommand016":     {ver: "0.1.6", args: routerArgsWith("roundrobin"), rules: podRole, engine: noCommand, want: []string{"router 0.1.6's sleep-mode check of engine Deployment s-m-deployment-vllm iterates its empty command and fails: the engine is never added"}},
		"ServiceNameRight": {args: routerArgsWith("roundrobin", "--k8s-service-discovery-type", "service-name", "--k8s-port", "80"), rules: serviceRole},
		"ServiceNameSleep": {args: routerArgsWith("roundrobin", "--k8s-service-discovery-type", "service-name", "--k8s-port", "80"), engine: sleeping,
			rules: []rbacv1.PolicyRule{rule([]string{"pods"}, "list"), rule([]string{"services"}, "get", "watch", "patch"), rule([]string{"endpoints"}, "get")}},
		"ServiceNameNoCommand": {args: routerArgsWith("roundrobin", "--k8s-service-discovery-type", "service-name", "--k8s-port", "80"), rules: serviceRole, engine: noCommand,
			want: []string{"router 0.1.12's sleep-mode check of engine Deployment s-m-deployment-vllm iterates its empty command and fails: the engine is never added"}},
		"ServiceNameChartRole": {args: routerArgsWith("roundrobin", "--k8s-service-discovery-type", "service-name", "--k8s-port", "80"), rules: chartServiceRole, want: []string{
			"its Role grants endpoints list, which router 0.1.12 with service-name discovery never calls for this stack",
			"its Role grants endpoints patch, which router 0.1.12 with service-name discovery never calls for this stack",
			"its Role grants endpoints watch, which router 0.1.12 with service-name discovery never calls for this stack",
			"its Role grants pods get, which router 0.1.12 with service-name discovery never calls for this stack",
			"its Role grants pods patch, which router 0.1.12 with service-name discovery never calls for this stack",
			"its Role grants pods watch, which router 0.1.12 with service-name discovery never calls for this stack",
			"its Role grants services list, which router 0.1.12 with service-name discovery never calls for this stack",
			"its Role grants services patch, which router 0.1.12 with service-name discovery never calls for this stack"}},
		"ServiceNameNoPort": {args: routerArgsWith("roundrobin", "--k8s-service-discovery-type", "service-name"), rules: serviceRole, want: []string{"no --k8s-port (so 8000): engine Service s-m-engine-service has no port 8000"}},
		"ServiceNamePodsRole": {args: routerArgsWith("roundrobin", "--k8s-service-discovery-type", "service-name", "--k8s-port", "80"), rules: podRole, want: []string{
			"router 0.1.12 with service-name discovery calls endpoints get, and its Role does not grant it",
			"router 0.1.12 with service-name discovery calls pods list, and its Role does not grant it",
			"router 0.1.12 with service-name discovery calls services get, and its Role does not grant it",
			"router 0.1.12 with service-name discovery calls services watch, and its Role does not grant it",
			"its Role grants pods get, which router 0.1.12 with service-name discovery never calls for this stack",
			"its Role grants pods watch, which router 0.1.12 with service-name discovery never calls for this stack"}},
		"StaticNeedsNothing": {args: []string{"--service-discovery", "static", "--static-backends", "http://x", "--static-models", "m", "--routing-logic", "roundrobin"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ver := tc.ver
			if ver == "" {
				ver = "0.1.12"
			}
			v, err := parseUpVersion(ver)
			if err != nil {
				t.Fatal(err)
			}
			e := tc.engine
			if e.Name == "" {
				e = eng
			}
			got := checkDiscovery(v, container("router", tc.args), tc.rules, []corev1.Service{svc}, []appsv1.Deployment{e})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContractCheckController(t *testing.T) {
	routerSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "s-router-service"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Port: 80, TargetPort: intstr.FromInt32(8000)},
		{Port: 9000, TargetPort: intstr.FromString("lmcache-port")},
		{Port: 9001, TargetPort: intstr.FromInt32(9001)},
	}}}
	router := corev1.Container{Name: "router", Args: routerArgsWith("kvaware", "--session-key", "x", "--lmcache-controller-port", "9000", "--lmcache-controller-reply-port", "9001"),
		Ports: []corev1.ContainerPort{{Name: "router-port", ContainerPort: 8000}, {Name: "lmcache-port", ContainerPort: 9000}, {Name: "lmcache-reply", ContainerPort: 9001}}}
	withEnv := func(kv ...string) corev1.Container {
		env := controllerEnv()
		for i := 0; i < len(kv); i += 2 {
			env[slices.IndexFunc(env, func(e corev1.EnvVar) bool { return e.Name == kv[i] })].Value = kv[i+1]
		}
		return container("vllm", engineArgsWith(), env...)
	}
	cases := map[string]struct {
		engine corev1.Container
		router corev1.Container
		want   []string
	}{
		"Right":           {engine: withEnv(), router: router},
		"FQDN":            {engine: withEnv("LMCACHE_CONTROLLER_PULL_URL", "s-router-service.llm.svc.cluster.local:9000"), router: router},
		"ControllerOff":   {engine: withEnv("LMCACHE_ENABLE_CONTROLLER", "False", "LMCACHE_CONTROLLER_PULL_URL", "elsewhere:1"), router: router},
		"OtherHost":       {engine: withEnv("LMCACHE_CONTROLLER_PULL_URL", "s-engine-service:9000"), router: router, want: []string{"env LMCACHE_CONTROLLER_PULL_URL=s-engine-service:9000: the host is not the router Service"}},
		"NotHostPort":     {engine: withEnv("LMCACHE_CONTROLLER_PULL_URL", "tcp://s-router-service"), router: router, want: []string{"env LMCACHE_CONTROLLER_PULL_URL=tcp://s-router-service: not host:port"}},
		"PortNotExposed":  {engine: withEnv("LMCACHE_CONTROLLER_REPLY_URL", "s-router-service:9002"), router: router, want: []string{"env LMCACHE_CONTROLLER_REPLY_URL=s-router-service:9002: Service s-router-service has no port 9002"}},
		"NoContainerPort": {engine: withEnv(), router: corev1.Container{Name: "router", Args: router.Args, Ports: router.Ports[:2]}, want: []string{"env LMCACHE_CONTROLLER_REPLY_URL=s-router-service:9001: Service s-router-service port 9001 targets 9001, no port of container router"}},
		"RouterNotListening": {engine: withEnv(), router: corev1.Container{Name: "router", Args: routerArgsWith("kvaware", "--session-key", "x", "--lmcache-controller-port", "9000"), Ports: router.Ports},
			want: []string{"env LMCACHE_CONTROLLER_REPLY_URL=s-router-service:9001 leads to router port 9001, and the router has no --lmcache-controller-reply-port 9001"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, checkController(tc.engine, routerSvc, tc.router)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

func TestContractCheckCacheServer(t *testing.T) {
	ports := []corev1.ContainerPort{{Name: "caserver-cport", ContainerPort: 8080}}
	cases := map[string]struct {
		command, args []string
		want          []string
	}{
		"Chart":           {command: []string{"/opt/venv/bin/lmcache_server", "0.0.0.0", "8080"}},
		"OnPath":          {command: []string{"lmcache_server"}, args: []string{"0.0.0.0", "8080"}},
		"V0Server":        {command: []string{"/opt/venv/bin/lmcache_v0_server", "0.0.0.0", "8080"}, want: []string{"/opt/venv/bin/lmcache_v0_server is gone from current LMCache: run lmcache_server"}},
		"Experimental":    {command: []string{"lmcache_experimental_server", "0.0.0.0", "8080"}, want: []string{"lmcache_experimental_server is gone from current LMCache: run lmcache_server"}},
		"OtherBinary":     {command: []string{"python", "-m", "lmcache.v1.server"}, want: []string{"python is not lmcache_server"}},
		"StorageArgument": {command: []string{"lmcache_server", "0.0.0.0", "8080", "cpu"}, want: []string{`command ["lmcache_server" "0.0.0.0" "8080" "cpu"]: want lmcache_server <host> <port>`}},
		"OtherPort":       {command: []string{"lmcache_server", "0.0.0.0", "81"}, want: []string{"lmcache_server listens on 81, not a container port"}},
		"NoCommand":       {want: []string{"no command: want lmcache_server <host> <port>"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := corev1.Container{Name: "lmcache-server", Command: tc.command, Args: tc.args, Ports: ports}
			if diff := cmp.Diff(tc.want, checkCacheServer(c)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestContractPinVersions: the way the test selects releases.
func TestContractPinVersions(t *testing.T) {
	xr := stacktest.XRYAML(t, `
spec:
  vllmConfig: {image: "docker.io/vllm/vllm-openai:v0.8.3"}
  models:
    - {name: a}
    - {name: b, vllmConfig: {image: "lmcache/vllm-openai:2025-05-27-v1"}}
    - {name: c, vllmConfig: {image: "vllm/vllm-openai:0.9.2"}}
    - {name: d, vllmConfig: {tensorParallelSize: 2}}
`)
	pinVersions(xr, "0.10.2", "HEAD")
	want := stacktest.XRYAML(t, `
spec:
  vllmConfig: {image: "docker.io/vllm/vllm-openai:v0.10.2", engineVersion: "0.10.2"}
  models:
    - {name: a}
    - {name: b, vllmConfig: {image: "lmcache/vllm-openai:2025-05-27-v1", engineVersion: "0.10.2"}}
    - {name: c, vllmConfig: {image: "vllm/vllm-openai:v0.10.2", engineVersion: "0.10.2"}}
    - {name: d, vllmConfig: {tensorParallelSize: 2}}
  routerConfig: {image: "lmcache/lmstack-router:latest"}
`)
	if diff := cmp.Diff(want, xr); diff != "" {
		t.Errorf("pinned XR (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		msg, ver string
		want     bool
	}{
		{"router 0.1.1 is older", "0.1.1", true},
		{"needs router 0.1.12 or later", "0.1.1", false},
		{"the router is 0.1.10 (", "0.1.1", false},
		{"runs vLLM 0.8.3.", "0.8.3", true},
		{"image v0.8.3 (vllmConfig.image)", "0.8.3", true},
		{"vLLM 0.8.30", "0.8.3", false},
		{"vLLM 0.8.3.1", "0.8.3", false},
		{"image lmcache/lmstack-router:latest", "latest", true},
	} {
		if got := namesVersion(c.msg, c.ver); got != c.want {
			t.Errorf("namesVersion(%q, %q) = %v, want %v", c.msg, c.ver, got, c.want)
		}
	}
}

// TestNewestReleaseContract: what a stack with LMCache renders for vLLM
// 0.27.1, the newest release the function knows, keeps its contract.
func TestNewestReleaseContract(t *testing.T) {
	b := reconciled(t, with("vllmConfig.image", "vllm/vllm-openai:v0.27.1", "vllmConfig.enableChunkedPrefill", false, "lmcacheConfig.enabled", true), nil)
	if b.refusal != "" {
		t.Fatal(b.refusal)
	}
	r := renderedOf(b)
	if p := loadUpstream(t).check(r, "0.27.1", "0.1.12", stackExtraArgs{}); len(p) != 0 {
		t.Errorf("problems at vLLM 0.27.1: %q", p)
	}
}

// TestContractCheckDataParallelGroup: each wrong piece of a data-parallel
// group the multi-node check finds, and a right one passes.
func TestContractCheckDataParallelGroup(t *testing.T) {
	build := func() lwsv1.LeaderWorkerSet {
		return *desired(t, mustRun(t, req(t, wideEPXR("0.22.0"), nil, nil)), "engine-m-leaderworkerset", &lwsv1.LeaderWorkerSet{})
	}
	both := func(l *lwsv1.LeaderWorkerSet, old, new string) {
		for _, tmpl := range []*corev1.PodTemplateSpec{l.Spec.LeaderWorkerTemplate.LeaderTemplate, &l.Spec.LeaderWorkerTemplate.WorkerTemplate} {
			a := tmpl.Spec.Containers[0].Args
			a[slices.Index(a, old)] = new
		}
	}
	for name, tc := range map[string]struct {
		change func(*lwsv1.LeaderWorkerSet)
		want   []string
	}{
		"Right": {change: func(*lwsv1.LeaderWorkerSet) {}},
		"LocalWrong": {change: func(l *lwsv1.LeaderWorkerSet) {
			both(l, "--data-parallel-size-local=8", "--data-parallel-size-local=4")
		}, want: []string{
			`--data-parallel-size-local "4" × 2 pods is not --data-parallel-size 16`, "the pod of node rank 1 starts at data-parallel rank 8, want 4"}},
		"RanksNotGPUs": {change: func(l *lwsv1.LeaderWorkerSet) { both(l, "--data-parallel-size=16", "--data-parallel-size=8") }, want: []string{
			`--data-parallel-size-local "8" × 2 pods is not --data-parallel-size 8`, "the pod of node rank 1 starts at data-parallel rank 4, want 8", "tensor × pipeline parallel size is 8, and a group has 16 GPUs"}},
		"LeaderBindsName": {change: func(l *lwsv1.LeaderWorkerSet) {
			a := l.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0].Args
			a[slices.Index(a, "$(POD_IP)")] = "$(LWS_LEADER_ADDRESS)"
		}, want: []string{`the leader's --data-parallel-address is "$(LWS_LEADER_ADDRESS)", want its own $(POD_IP)`}},
		"WorkerAddress": {change: func(l *lwsv1.LeaderWorkerSet) {
			a := l.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0].Args
			a[slices.Index(a, "--data-parallel-address")+1] = "$(POD_IP)"
		}, want: []string{`the worker's --data-parallel-address is "$(POD_IP)", want the leader's $(LWS_LEADER_ADDRESS)`}},
	} {
		t.Run(name, func(t *testing.T) {
			l := build()
			tc.change(&l)
			var got []string
			for _, p := range checkMultiNode(l) {
				p, _, _ = strings.Cut(p, ": [")
				got = append(got, p)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
}

// TestContractCheckMultiNode: each wrong piece of a LeaderWorkerSet the
// multi-node check finds, and a right one passes.
func TestContractCheckMultiNode(t *testing.T) {
	build := func() lwsv1.LeaderWorkerSet {
		return *desired(t, mustRun(t, req(t, mnXR(), nil, nil)), "engine-m-leaderworkerset", &lwsv1.LeaderWorkerSet{})
	}
	setArgs := func(tmpl *corev1.PodTemplateSpec, f func([]string) []string) {
		tmpl.Spec.Containers[0].Args = f(slices.Clone(tmpl.Spec.Containers[0].Args))
	}
	replace := func(old, new string) func([]string) []string {
		return func(a []string) []string {
			a[slices.Index(a, old)] = new
			return a
		}
	}
	cases := map[string]struct {
		change func(*lwsv1.LeaderWorkerSet)
		want   []string
	}{
		"Right": {change: func(*lwsv1.LeaderWorkerSet) {}},
		"WorkerRankZero": {change: func(l *lwsv1.LeaderWorkerSet) {
			setArgs(&l.Spec.LeaderWorkerTemplate.WorkerTemplate, replace("$(LWS_WORKER_INDEX)", "0"))
		}, want: []string{`the worker's --node-rank is "0", want "$(LWS_WORKER_INDEX)"`}},
		"WorkerNotHeadless": {change: func(l *lwsv1.LeaderWorkerSet) {
			setArgs(&l.Spec.LeaderWorkerTemplate.WorkerTemplate, func(a []string) []string { return a[:len(a)-1] })
		}, want: []string{"the worker's --headless: false, want true"}},
		"NodesNotSize": {change: func(l *lwsv1.LeaderWorkerSet) { l.Spec.LeaderWorkerTemplate.Size = ptr.To[int32](4) }, want: []string{
			`the leader's --nnodes is "2", want "4"`, `the worker's --nnodes is "2", want "4"`, "tensor × pipeline parallel size is 4, and a group has 8 GPUs"}},
		"ArgsDiffer": {change: func(l *lwsv1.LeaderWorkerSet) {
			setArgs(l.Spec.LeaderWorkerTemplate.LeaderTemplate, replace("--pipeline-parallel-size=2", "--pipeline-parallel-size=1"))
		}, want: []string{"the leader's and the workers' arguments differ beyond their rank", "tensor × pipeline parallel size is 2, and a group has 4 GPUs"}},
		"WorkerProbes": {change: func(l *lwsv1.LeaderWorkerSet) {
			l.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0].ReadinessProbe = l.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0].ReadinessProbe
		}, want: []string{"the workers have probes, and a headless engine answers none"}},
		"RestartNone": {change: func(l *lwsv1.LeaderWorkerSet) { l.Spec.LeaderWorkerTemplate.RestartPolicy = lwsv1.NoneRestartPolicy }, want: []string{
			`restartPolicy "None": a group whose pod restarts cannot rejoin its peers; want RecreateGroupOnPodRestart`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l := build()
			tc.change(&l)
			var got []string
			for _, p := range checkMultiNode(l) {
				p, _, _ = strings.Cut(p, ": [") // not the arguments themselves
				got = append(got, p)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
	// The router selects leaders only; a selector that also takes the
	// workers is a problem.
	l := build()
	workers := lwsDeployments(l)[1:]
	if got := checkHeadlessUndiscovered(container("router", []string{"--service-discovery", "k8s", "--k8s-label-selector", "app.kubernetes.io/instance=s"}), workers); len(got) != 1 {
		t.Errorf("a selector of every pod of the stack: problems %q, want one", got)
	}
	if got := checkHeadlessUndiscovered(container("router", []string{"--service-discovery", "k8s", "--k8s-label-selector", "app.kubernetes.io/instance=s,app.kubernetes.io/component=serving-engine"}), workers); len(got) != 0 {
		t.Errorf("the stack's selector: problems %q", got)
	}
}

// TestContractCheckRayGroup: the Ray form of a group, right, and each
// wrong piece found.
func TestContractCheckRayGroup(t *testing.T) {
	build := func() lwsv1.LeaderWorkerSet {
		return *desired(t, mustRun(t, req(t, mnXR("vllmConfig.image", "vllm/vllm-openai:v0.11.0"), nil, nil)), "engine-m-leaderworkerset", &lwsv1.LeaderWorkerSet{})
	}
	leaderOf := func(l *lwsv1.LeaderWorkerSet) *corev1.Container {
		return &l.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0]
	}
	for name, tc := range map[string]struct {
		change func(*lwsv1.LeaderWorkerSet)
		want   []string
	}{
		"Right": {change: func(*lwsv1.LeaderWorkerSet) {}},
		"MPBackend": {change: func(l *lwsv1.LeaderWorkerSet) {
			c := leaderOf(l)
			c.Args = append(slices.Clone(c.Args[:len(c.Args)-1]), "mp", "--nnodes=2")
		}, want: []string{`the Ray leader's --distributed-executor-backend is "mp", want ray`, "the Ray leader sets --nnodes, which the Ray backend refuses with more than one node"}},
		"WorkerRunsVLLM": {change: func(l *lwsv1.LeaderWorkerSet) {
			l.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0].Command = []string{"vllm", "serve"}
		}, want: []string{`the Ray group's workers run ["vllm" "serve"], not the Ray worker`}},
	} {
		t.Run(name, func(t *testing.T) {
			l := build()
			tc.change(&l)
			if diff := cmp.Diff(tc.want, checkMultiNode(l)); diff != "" {
				t.Errorf("problems (-want +got):\n%s", diff)
			}
		})
	}
	// The script moved after 0.20.0: a worker of a later release is wrong.
	worker := build().Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0]
	want := []string{"vLLM 0.22.0's image has no /vllm-workspace/examples/online_serving/multi-node-serving.sh (moved after 0.20.0)"}
	if diff := cmp.Diff(want, loadUpstream(t).checkEngine("0.22.0", worker, nil)); diff != "" {
		t.Errorf("a Ray worker of 0.22.0 (-want +got):\n%s", diff)
	}
}
