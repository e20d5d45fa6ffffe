package stack

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// TestVLLMVersionSources: where the engine's vLLM release comes from, read
// back from how chunked prefill is switched off (0.8.5 changed it).
func TestVLLMVersionSources(t *testing.T) {
	input := func(ver string) map[string]any {
		return map[string]any{"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input", "engine": map[string]any{"version": ver}}
	}
	cases := map[string]struct {
		xr    map[string]any
		input map[string]any
		want  string // the chunked prefill switch: "=false" before 0.8.5
	}{
		"TagOfVLLMImage":           {xr: with("vllmConfig.image", "vllm/vllm-openai:v0.8.4"), want: "--enable-chunked-prefill=false"},
		"TagWithRegistry":          {xr: with("vllmConfig.image", "vllm/vllm-openai:v0.8.4", "vllmConfig.imagePullRegistry", "mirror.local/hub"), want: "--enable-chunked-prefill=false"},
		"EngineVersionForLatest":   {xr: with("vllmConfig.engineVersion", "0.8.4"), want: "--enable-chunked-prefill=false"},
		"EngineVersionForLMCache":  {xr: with("vllmConfig.image", "lmcache/vllm-openai:v0.3.9post2", "vllmConfig.engineVersion", "v0.8.4"), want: "--enable-chunked-prefill=false"},
		"AgreeingTagAndVersion":    {xr: with("vllmConfig.image", "vllm/vllm-openai:v0.8.4", "vllmConfig.engineVersion", "0.8.4"), want: "--enable-chunked-prefill=false"},
		"InputVersion":             {xr: minimalXR(), input: input("0.8.4"), want: "--enable-chunked-prefill=false"},
		"StackVersionBeatsInput":   {xr: with("vllmConfig.engineVersion", "0.9.2"), input: input("0.8.4"), want: "--no-enable-chunked-prefill"},
		"TagBeatsInput":            {xr: with("vllmConfig.image", "vllm/vllm-openai:v0.9.2"), input: input("0.8.4"), want: "--no-enable-chunked-prefill"},
		"CustomImageTagIsNotVLLM":  {xr: with("vllmConfig.image", "myorg/vllm:0.8.4"), want: "--no-enable-chunked-prefill"},
		"DefaultIsNewest":          {xr: minimalXR(), want: "--no-enable-chunked-prefill"},
		"ItemInheritsTopLevelTag":  {xr: with("model", nil, "vllmConfig.image", "vllm/vllm-openai:v0.8.4", "models", []any{map[string]any{"name": "m", "modelURL": "org/m"}}), want: "--enable-chunked-prefill=false"},
		"ItemOverridesTopLevelTag": {xr: with("model", nil, "vllmConfig.image", "vllm/vllm-openai:v0.8.4", "models", []any{map[string]any{"name": "m", "modelURL": "org/m", "vllmConfig": map[string]any{"image": "vllm/vllm-openai:v0.9.2"}}}), want: "--no-enable-chunked-prefill"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			stacktest.SetPath(tc.xr, "spec.vllmConfig.enableChunkedPrefill", false)
			args := engineContainer0(t, mustRun(t, req(t, tc.xr, tc.input, nil)), "engine-m").Args
			if !strings.Contains(strings.Join(args, " "), tc.want) {
				t.Errorf("args %q do not hold %s", args, tc.want)
			}
		})
	}
}

// TestVersionFatals: what a release cannot do, or a version that cannot be
// used, is refused naming the field, the release and the fix.
func TestVersionFatals(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	cases := map[string]struct {
		xr   map[string]any
		want string
	}{
		"LMCacheV0ConnectorAfter0100": {
			xr:   with("lmcacheConfig.enabled", true, "vllmConfig.v1", false, "vllmConfig.image", "vllm/vllm-openai:v0.10.2"),
			want: prefix + "spec.lmcacheConfig.enabled with vllmConfig.v1 false needs LMCacheConnector, which vLLM 0.10.1 removed, and the engine runs vLLM 0.10.2 (vllmConfig.image docker.io/vllm/vllm-openai:v0.10.2): remove vllmConfig.v1 to use LMCacheConnectorV1",
		},
		"V0EngineFrom0110": {
			xr:   with("vllmConfig.v1", false, "vllmConfig.engineVersion", "0.11.0"),
			want: prefix + "spec.vllmConfig.v1 is false, which needs vLLM's V0 engine, and the engine runs vLLM 0.11.0 (vllmConfig.engineVersion 0.11.0): vLLM 0.11.0 removed the V0 engine; remove v1 or use an image of an older vLLM",
		},
		"V0EngineOnLatest": {
			xr:   with("vllmConfig.v1", false),
			want: prefix + "spec.vllmConfig.v1 is false, which needs vLLM's V0 engine, and the engine runs vLLM 0.27.1 (the newest known, as vllmConfig.image names no release): vLLM 0.11.0 removed the V0 engine; remove v1 or use an image of an older vLLM",
		},
		"TagAndVersionDisagree": {
			xr:   with("vllmConfig.image", "vllm/vllm-openai:v0.9.2", "vllmConfig.engineVersion", "0.10.2"),
			want: prefix + "spec.vllmConfig: vllmConfig.engineVersion 0.10.2 contradicts vllmConfig.image docker.io/vllm/vllm-openai:v0.9.2, which runs vLLM 0.9.2: remove engineVersion or make the two agree",
		},
		"NotARelease": {
			xr:   with("vllmConfig.engineVersion", "nightly"),
			want: prefix + `spec.vllmConfig: vllmConfig.engineVersion "nightly" is not a vLLM release: use a release number such as 0.9.2`,
		},
		"TooOld": {
			xr:   with("models", []any{map[string]any{"name": "old", "modelURL": "org/old", "vllmConfig": map[string]any{"image": "vllm/vllm-openai:v0.7.3"}}}, "model", nil),
			want: prefix + "spec.models[0].vllmConfig: vLLM 0.7.3 (vllmConfig.image docker.io/vllm/vllm-openai:v0.7.3) is older than 0.8.3, the oldest release this function renders arguments for: use an image of vLLM 0.8.3 or later",
		},
		"PrefixAwareBefore013": {
			xr:   with("routerConfig", map[string]any{"routerType": "prefixaware", "image": "lmcache/lmstack-router:v0.1.2"}),
			want: prefix + "spec.routerConfig.routerType prefixaware needs router 0.1.3 or later, and the router is 0.1.2 (routerConfig.image lmcache/lmstack-router:v0.1.2): use a newer router image or another routerType",
		},
		"PrefixMinMatchBefore0112": {
			xr:   with("routerConfig", map[string]any{"routerType": "prefixaware", "prefixMinMatchLength": 8, "image": "lmcache/lmstack-router:v0.1.11"}),
			want: prefix + "spec.routerConfig.prefixMinMatchLength needs router 0.1.12 or later, the first to parse --prefix-min-match-length, and the router is 0.1.11 (routerConfig.image lmcache/lmstack-router:v0.1.11): use a router image of 0.1.12 or later",
		},
		"DiscoveryTypeBefore017": {
			xr:   with("routerConfig", map[string]any{"k8sServiceDiscoveryType": "pod-ip", "routerVersion": "0.1.6", "image": "myorg/router:prod"}),
			want: prefix + "spec.routerConfig.k8sServiceDiscoveryType needs router 0.1.7 or later, the first to parse --k8s-service-discovery-type, and the router is 0.1.6 (routerConfig.routerVersion 0.1.6): use a router image of 0.1.7 or later",
		},
		"KVAwareBefore0111": {
			xr: with("lmcacheConfig.enabled", true, "routerConfig", map[string]any{"routerType": "kvaware", "kvAwareThreshold": 10, "image": "lmcache/lmstack-router:0.1.4"}),
			want: prefix + "spec.routerConfig.routerType kvaware needs router 0.1.11 or later, the first to parse --lmcache-controller-reply-port, and the router is 0.1.4 (routerConfig.image lmcache/lmstack-router:0.1.4): use a router image of 0.1.11 or later; " +
				"spec.routerConfig.kvAwareThreshold needs router 0.1.5 or later, the first to parse --kv-aware-threshold, and the router is 0.1.4 (routerConfig.image lmcache/lmstack-router:0.1.4): use a router image of 0.1.5 or later",
		},
		"RouterTagAndVersionDisagree": {
			xr:   with("routerConfig", map[string]any{"image": "lmcache/lmstack-router:v0.1.9", "routerVersion": "0.1.10"}),
			want: prefix + "spec.routerConfig: routerVersion 0.1.10 contradicts image lmcache/lmstack-router:v0.1.9, which runs router 0.1.9: remove routerVersion or make the two agree",
		},
		"RouterInputVersionNotARelease": {
			xr:   with("routerConfig.routerVersion", "head"),
			want: prefix + `spec.routerConfig: routerConfig.routerVersion "head" is not a router release: use a release number such as 0.1.9`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := fatal(t, run(t, req(t, tc.xr, nil, nil))); got != tc.want {
				t.Errorf("Fatal message:\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}

// warningsOf runs a stack that must compose and returns its warnings.
func warningsOf(t *testing.T, xr map[string]any) []string {
	t.Helper()
	return mustRun(t, req(t, xr, nil, nil)).warnings
}

// TestVersionWarnings: what a release ignores is a warning, never silent.
func TestVersionWarnings(t *testing.T) {
	cases := map[string]struct {
		xr   map[string]any
		want []string
	}{
		"V1IgnoredFrom0111": {
			xr:   with("vllmConfig.v1", true, "vllmConfig.engineVersion", "0.12.0"),
			want: []string{"spec.vllmConfig.v1 has no effect: the engine runs vLLM 0.12.0 (vllmConfig.engineVersion 0.12.0), which only has the V1 engine and no longer reads VLLM_USE_V1; remove v1"},
		},
		"V1ReadIn0110": {xr: with("vllmConfig.v1", true, "vllmConfig.engineVersion", "0.11.0")},
		"NewerThanKnown": {
			xr:   with("vllmConfig.image", "vllm/vllm-openai:v0.30.1"),
			want: []string{"spec.vllmConfig: vLLM 0.30.1 (vllmConfig.image docker.io/vllm/vllm-openai:v0.30.1) is newer than 0.27.1, the newest release this function knows: its arguments are rendered as for 0.27.1"},
		},
		"NewestKnown0271":    {xr: with("vllmConfig.image", "vllm/vllm-openai:v0.27.1")},
		"Release0230IsKnown": {xr: with("vllmConfig.engineVersion", "0.23.0")},
		"NewerThan0271": {
			xr:   with("vllmConfig.image", "vllm/vllm-openai:v0.28.0"),
			want: []string{"spec.vllmConfig: vLLM 0.28.0 (vllmConfig.image docker.io/vllm/vllm-openai:v0.28.0) is newer than 0.27.1, the newest release this function knows: its arguments are rendered as for 0.27.1"},
		},
		"RouterNewerThanKnown": {
			xr:   with("routerConfig.image", "lmcache/lmstack-router:v0.2.0"),
			want: []string{"spec.routerConfig: router 0.2.0 (routerConfig.image lmcache/lmstack-router:v0.2.0) is newer than 0.1.12, the newest release this function knows: its arguments are rendered as for 0.1.12"},
		},
		"RouterDevBuildOfNext": {xr: with("routerConfig.image", "lmcache/lmstack-router:0.1.13.dev4-g1234")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := warningsOf(t, tc.xr); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("warnings:\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
}

// TestNewestRelease: an engine of vLLM 0.27.1, the newest release the
// function knows, gets its spellings without a warning (the stack package's
// TestNewestReleaseContract checks what it renders against the contract of
// 0.27.1).
func TestNewestRelease(t *testing.T) {
	xr := with("vllmConfig.image", "vllm/vllm-openai:v0.27.1", "vllmConfig.enableChunkedPrefill", false, "lmcacheConfig.enabled", true)
	if got := warningsOf(t, xr); len(got) != 0 {
		t.Errorf("warnings for vLLM 0.27.1: %q", got)
	}
	c := engineContainer0(t, mustRun(t, req(t, xr, nil, nil)), "engine-m")
	want := []string{"org/m", "--host", "0.0.0.0", "--port", "8000", "--shutdown-timeout=30", "--no-enable-chunked-prefill",
		"--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`}
	if diff := cmp.Diff(want, c.Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(withPodIP(env("HF_HOME", "/data", "LMCACHE_USE_EXPERIMENTAL", "True", "LMCACHE_LOG_LEVEL", "INFO")...), c.Env); diff != "" {
		t.Errorf("env (-want +got):\n%s", diff)
	}
}
