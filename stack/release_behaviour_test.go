package stack

import (
	"strings"
	"testing"
)

// TestReleaseBehaviourWarnings: a pod that would start and not do what the
// stack asks is a warning naming the field, the release and the fix.
func TestReleaseBehaviourWarnings(t *testing.T) {
	const (
		chunkedOn083  = "spec.vllmConfig.enableChunkedPrefill false has no effect: the engine runs vLLM 0.8.3 (vllmConfig.image docker.io/vllm/vllm-openai:v0.8.3), whose V1 engine always uses chunked prefill; vLLM 0.12.0 is the first release that honours it (PR #28665): use an image of vLLM 0.12.0 or later, or set vllmConfig.v1: false for the V0 engine, which honours it"
		chunkedOn0110 = "spec.vllmConfig.enableChunkedPrefill false has no effect: the engine runs vLLM 0.11.0 (vllmConfig.engineVersion 0.11.0), whose V1 engine always uses chunked prefill; vLLM 0.12.0 is the first release that honours it (PR #28665): use an image of vLLM 0.12.0 or later"
		kvUnknown     = "the LMCache controller and its workers are known to work only on the same LMCache release (production-stack PR #1060), and kvaware misses silently otherwise; pin the engines' LMCache with an lmcache/vllm-openai image whose tag names LMCache 0.3.11"
	)
	logLevel := func(name string) []any { return []any{map[string]any{"name": name, "value": "INFO"}} }
	cases := map[string]struct {
		xr   map[string]any
		want []string
	}{
		// Chunked prefill off (item 2): the V1 engine of 0.8.3-0.11.x turns
		// it on anyway (_set_default_args_v1).
		"ChunkedPrefillOffV1On083":  {xr: with("vllmConfig.enableChunkedPrefill", false, "vllmConfig.image", "vllm/vllm-openai:v0.8.3"), want: []string{chunkedOn083}},
		"ChunkedPrefillOffV1On0110": {xr: with("vllmConfig.enableChunkedPrefill", false, "vllmConfig.engineVersion", "0.11.0"), want: []string{chunkedOn0110}},
		"ChunkedPrefillOffOn0120":   {xr: with("vllmConfig.enableChunkedPrefill", false, "vllmConfig.engineVersion", "0.12.0")},
		"ChunkedPrefillOffV0":       {xr: with("vllmConfig.enableChunkedPrefill", false, "vllmConfig.v1", false, "vllmConfig.engineVersion", "0.10.2")},
		"ChunkedPrefillOn":          {xr: with("vllmConfig.enableChunkedPrefill", true, "vllmConfig.engineVersion", "0.9.2")},
		// Variables vLLM does not read (item 4), from vllm_envs.tsv.
		"LogLevelIsNotRead": {
			xr:   with("env", logLevel("VLLM_LOG_LEVEL"), "vllmConfig.image", "vllm/vllm-openai:v0.8.3"),
			want: []string{"spec.env VLLM_LOG_LEVEL has no effect: vLLM 0.8.3 (vllmConfig.image docker.io/vllm/vllm-openai:v0.8.3) does not read it (vllm/envs.py); the variable it reads with the nearest name is VLLM_LOGGING_LEVEL"},
		},
		"LoggingLevelIsRead": {xr: with("env", logLevel("VLLM_LOGGING_LEVEL"))},
		"OtherPrefixIgnored": {xr: with("env", logLevel("NCCL_DEBUG"))},
		"UseV1AfterRemoval": {
			xr:   with("env", []any{map[string]any{"name": "VLLM_USE_V1", "value": "1"}}, "vllmConfig.engineVersion", "0.12.0"),
			want: []string{"spec.env VLLM_USE_V1 has no effect: vLLM 0.12.0 (vllmConfig.engineVersion 0.12.0) does not read it (vllm/envs.py); the variable it reads with the nearest name is VLLM_V1_USE_OUTLINES_CACHE"},
		},
		"RPCTimeoutOnNewest": {
			xr:   with("env", []any{map[string]any{"name": "VLLM_RPC_TIMEOUT", "value": "5"}}, "vllmConfig.engineVersion", "0.27.1"),
			want: []string{"spec.env VLLM_RPC_TIMEOUT has no effect: vLLM 0.27.1 (vllmConfig.engineVersion 0.27.1) does not read it (vllm/envs.py); the variable it reads with the nearest name is VLLM_RPC_BASE_PATH"},
		},
		// A release between two examined ones reads what either reads:
		// VLLM_ATTENTION_BACKEND is declared at 0.13.0, not at 0.16.0, so
		// 0.14.0 may read it (no warning) while 0.16.0 does not.
		"AttentionBackendBetweenSnapshots": {
			xr: with("env", []any{map[string]any{"name": "VLLM_ATTENTION_BACKEND", "value": "FLASH_ATTN"}}, "vllmConfig.engineVersion", "0.14.0", "vllmConfig.image", "myorg/vllm:x"),
		},
		"AttentionBackendAfterRemoval": {
			xr:   with("env", []any{map[string]any{"name": "VLLM_ATTENTION_BACKEND", "value": "FLASH_ATTN"}}, "vllmConfig.engineVersion", "0.16.0", "vllmConfig.image", "myorg/vllm:x"),
			want: []string{"spec.env VLLM_ATTENTION_BACKEND has no effect: vLLM 0.16.0 (vllmConfig.engineVersion 0.16.0) does not read it (vllm/envs.py); the variable it reads with the nearest name is VLLM_NVFP4_GEMM_BACKEND"},
		},
		"PerModelOnce": {
			xr: with("model", nil, "env", logLevel("VLLM_LOG_LEVEL"), "vllmConfig.engineVersion", "0.10.2", "models", []any{
				map[string]any{"name": "a", "modelURL": "org/a", "env": []any{map[string]any{"name": "VLLM_LOG_LEVEL", "value": "DEBUG"}}},
			}),
			want: []string{"spec.models[0].env VLLM_LOG_LEVEL has no effect: vLLM 0.10.2 (vllmConfig.engineVersion 0.10.2) does not read it (vllm/envs.py); the variable it reads with the nearest name is VLLM_LOGGING_LEVEL"},
		},
		// LMCache on the V0 engine in an image not vLLM's own (item 1).
		"LMCacheV0InLMCacheImage": {
			xr:   with("lmcacheConfig.enabled", true, "vllmConfig.v1", false, "vllmConfig.image", "lmcache/vllm-openai:2025-04-18", "vllmConfig.engineVersion", "0.8.4"),
			want: []string{"spec.lmcacheConfig.enabled with vllmConfig.v1 false needs LMCacheConnector, which imports lmcache.experimental, and LMCache renamed that to lmcache.v1 in May 2025: the engine (vLLM 0.8.4 (vllmConfig.engineVersion 0.8.4)) crashes at start unless docker.io/lmcache/vllm-openai:2025-04-18 has an LMCache from before; remove vllmConfig.v1 to use LMCacheConnectorV1"},
		},
		"LMCacheV1In092": {xr: with("lmcacheConfig.enabled", true, "vllmConfig.image", "vllm/vllm-openai:v0.9.2")},
		// LMCache of kvaware engines against the router's (item 5).
		"KVAwareStockImage": {
			xr:   kvAwareXR("vllmConfig.image", "vllm/vllm-openai:v0.10.2", "routerConfig.image", "lmcache/lmstack-router:v0.1.12"),
			want: []string{"spec.vllmConfig.image docker.io/vllm/vllm-openai:v0.10.2 does not say which LMCache it runs, and router 0.1.12 (routerConfig.image lmcache/lmstack-router:v0.1.12) runs LMCache 0.3.11 for kvaware: " + kvUnknown},
		},
		"KVAwareLMCacheDateTag": {
			xr:   kvAwareXR("vllmConfig.image", "lmcache/vllm-openai:2025-05-27-v1", "routerConfig.image", "lmcache/lmstack-router:v0.1.11"),
			want: []string{"spec.vllmConfig.image docker.io/lmcache/vllm-openai:2025-05-27-v1 does not say which LMCache it runs, and router 0.1.11 (routerConfig.image lmcache/lmstack-router:v0.1.11) runs LMCache 0.3.11 for kvaware: " + kvUnknown},
		},
		"KVAwareOtherLMCachePatch": {
			xr:   kvAwareXR("vllmConfig.image", "lmcache/vllm-openai:v0.3.9post2", "routerConfig.image", "lmcache/lmstack-router:v0.1.12"),
			want: []string{"spec.vllmConfig.image docker.io/lmcache/vllm-openai:v0.3.9post2 runs LMCache 0.3.9post2, and router 0.1.12 (routerConfig.image lmcache/lmstack-router:v0.1.12) runs LMCache 0.3.11 for kvaware: the LMCache controller and its workers are known to work only on the same LMCache release (production-stack PR #1060), and kvaware misses silently otherwise; use an engine image with LMCache 0.3.11"},
		},
		"KVAwareOtherLMCacheMinor": {
			xr:   kvAwareXR("models", []any{map[string]any{"name": "a", "modelURL": "org/a", "vllmConfig": map[string]any{"image": "lmcache/vllm-openai:v0.5.4"}}}, "model", nil, "routerConfig.image", "lmcache/lmstack-router:v0.1.12"),
			want: []string{"spec.models[0].vllmConfig.image docker.io/lmcache/vllm-openai:v0.5.4 runs LMCache 0.5.4, and router 0.1.12 (routerConfig.image lmcache/lmstack-router:v0.1.12) runs LMCache 0.3.11 for kvaware: an LMCache 0.3 controller rejects the registration of an LMCache 0.5 worker as an unknown message type (production-stack PR #1060), so kvaware misses silently; use an engine image with LMCache 0.3.11"},
		},
		"KVAwareSameLMCache":    {xr: kvAwareXR("vllmConfig.image", "lmcache/vllm-openai:v0.3.11", "routerConfig.image", "lmcache/lmstack-router:latest", "routerConfig.routerVersion", "0.1.12")},
		"LMCacheWithoutKVAware": {xr: with("lmcacheConfig.enabled", true, "vllmConfig.image", "lmcache/vllm-openai:v0.5.4")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := warningsOf(t, tc.xr); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("warnings:\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
}

// TestLMCacheImageFatals: LMCache on an image whose connector cannot load
// is refused, naming an image that works (item 1).
func TestLMCacheImageFatals(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	cases := map[string]struct {
		xr   map[string]any
		want string
	}{
		"StockImage083": {
			xr:   with("lmcacheConfig.enabled", true, "vllmConfig.image", "vllm/vllm-openai:v0.8.3"),
			want: prefix + "spec.lmcacheConfig.enabled needs LMCache in the engine's image, and the engine runs vLLM 0.8.3 (vllmConfig.image docker.io/vllm/vllm-openai:v0.8.3) in vLLM's own image, which has none (vLLM's images contain LMCache from 0.9.2): use vllm/vllm-openai:v0.9.2 or later, or an lmcache/vllm-openai image",
		},
		"StockImage091": {
			xr:   with("lmcacheConfig.enabled", true, "vllmConfig.image", "vllm/vllm-openai:v0.9.1"),
			want: prefix + "spec.lmcacheConfig.enabled needs LMCache in the engine's image, and the engine runs vLLM 0.9.1 (vllmConfig.image docker.io/vllm/vllm-openai:v0.9.1) in vLLM's own image, which has none (vLLM's images contain LMCache from 0.9.2): use vllm/vllm-openai:v0.9.2 or later, or an lmcache/vllm-openai image",
		},
		"StockLatestDeclared085": {
			xr:   with("lmcacheConfig.enabled", true, "vllmConfig.engineVersion", "0.8.5"),
			want: prefix + "spec.lmcacheConfig.enabled needs LMCache in the engine's image, and the engine runs vLLM 0.8.5 (vllmConfig.engineVersion 0.8.5) in vLLM's own image, which has none (vLLM's images contain LMCache from 0.9.2): use vllm/vllm-openai:v0.9.2 or later, or an lmcache/vllm-openai image",
		},
		"V1ConnectorBefore085": {
			xr:   with("lmcacheConfig.enabled", true, "vllmConfig.image", "lmcache/vllm-openai:2025-04-18", "vllmConfig.engineVersion", "0.8.4"),
			want: prefix + "spec.lmcacheConfig.enabled needs vLLM 0.8.5 or later (LMCacheConnectorV1), and the engine runs vLLM 0.8.4 (vllmConfig.engineVersion 0.8.4): use vllm/vllm-openai:v0.9.2 or later, whose images contain LMCache, or an lmcache/vllm-openai image of vLLM 0.8.5 or later",
		},
		"V0ConnectorInStockImage": {
			xr:   with("lmcacheConfig.enabled", true, "vllmConfig.v1", false, "vllmConfig.image", "vllm/vllm-openai:v0.10.0"),
			want: prefix + "spec.lmcacheConfig.enabled with vllmConfig.v1 false needs LMCacheConnector, which imports lmcache.experimental, and the engine runs vLLM 0.10.0 (vllmConfig.image docker.io/vllm/vllm-openai:v0.10.0) in vLLM's own image, which has none: it has no LMCache before 0.9.2 and from 0.9.2 the LMCache current when it was built, after LMCache renamed lmcache.experimental to lmcache.v1 (May 2025): remove vllmConfig.v1 to use LMCacheConnectorV1 with vllm/vllm-openai:v0.9.2 or later",
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

// TestRPCTimeoutOnlyForV0: VLLM_RPC_TIMEOUT is rendered only where the V0
// engine runs, the only reader of it (item 3).
func TestRPCTimeoutOnlyForV0(t *testing.T) {
	for name, tc := range map[string]struct {
		xr   map[string]any
		want bool
	}{
		"V1":         {xr: with("lmcacheConfig.enabled", true, "vllmConfig.engineVersion", "0.10.0"), want: false},
		"V1Explicit": {xr: with("lmcacheConfig.enabled", true, "vllmConfig.v1", true, "vllmConfig.engineVersion", "0.10.0"), want: false},
		"V0":         {xr: with("lmcacheConfig.enabled", true, "vllmConfig.v1", false, "vllmConfig.image", "lmcache/vllm-openai:2025-04-18", "vllmConfig.engineVersion", "0.10.0"), want: true},
		"Newest":     {xr: with("lmcacheConfig.enabled", true), want: false},
	} {
		t.Run(name, func(t *testing.T) {
			c := engineContainer0(t, mustRun(t, req(t, tc.xr, nil, nil)), "engine-m")
			got := false
			for _, e := range c.Env {
				if e.Name == "VLLM_RPC_TIMEOUT" {
					got = e.Value == "1000000"
				}
			}
			if got != tc.want {
				t.Errorf("VLLM_RPC_TIMEOUT=1000000 rendered: %v, want %v (env %v)", got, tc.want, c.Env)
			}
		})
	}
}

// TestExpandableSegmentsWithConnector: vLLM 0.22.0 and later refuse to
// start with a KV connector and PYTORCH_CUDA_ALLOC_CONF
// expandable_segments:True unless the cumem allocator is on (disagg.tsv);
// 0.21.x may, a warning; without a connector nothing is said.
func TestExpandableSegmentsWithConnector(t *testing.T) {
	const (
		prefix = "invalid ProductionStack: "
		why    = "with a KV connector (--kv-transfer-config or --kv-offloading-size: LMCache, disaggregation, kvOffloading or extraArgs), as remapped pages leave the connector's pinned KV cache registrations stale, unless the cumem allocator is on"
	)
	alloc := func(value string) []any {
		return []any{map[string]any{"name": "PYTORCH_CUDA_ALLOC_CONF", "value": value}}
	}
	lmcache := func(ver string, kv ...any) map[string]any {
		return with(append([]any{"vllmConfig.image", "vllm/vllm-openai:v" + ver, "lmcacheConfig.enabled", true, "env", alloc("expandable_segments:True,max_split_size_mb:512")}, kv...)...)
	}
	refusal022 := prefix + `spec.env PYTORCH_CUDA_ALLOC_CONF "expandable_segments:True,max_split_size_mb:512": vLLM 0.22.0 and later refuse to start ` + why + `, and the engine runs vLLM 0.22.0 (vllmConfig.image docker.io/vllm/vllm-openai:v0.22.0): remove expandable_segments:True, or add --enable-cumem-allocator to vllmConfig.extraArgs`
	for name, tc := range map[string]struct {
		xr               map[string]any
		refusal, warning string
	}{
		"LMCache":         {xr: lmcache("0.22.0"), refusal: refusal022},
		"CumemAllocator":  {xr: lmcache("0.22.0", "vllmConfig.extraArgs", []any{"--enable-cumem-allocator"})},
		"SleepMode":       {xr: lmcache("0.22.0", "vllmConfig.extraArgs", []any{"--enable-sleep-mode"})},
		"Off":             {xr: lmcache("0.22.0", "env", alloc("expandable_segments:False"))},
		"NoConnector":     {xr: lmcache("0.22.0", "lmcacheConfig.enabled", false)},
		"Before0210":      {xr: lmcache("0.20.0")},
		"Unbracketed0210": {xr: lmcache("0.21.0"), warning: `spec.env PYTORCH_CUDA_ALLOC_CONF "expandable_segments:True,max_split_size_mb:512": vLLM 0.22.0 and later refuse to start ` + why + `; the engine runs vLLM 0.21.0 (vllmConfig.image docker.io/vllm/vllm-openai:v0.21.0), which may already: remove expandable_segments:True`},
		"OwnConnector":    {xr: lmcache("0.22.0", "lmcacheConfig.enabled", false, "vllmConfig.extraArgs", []any{`--kv-transfer-config={"kv_connector":"OffloadingConnector","kv_role":"kv_both"}`}), refusal: refusal022},
		"Disaggregated":   {xr: pdXR("vllmConfig.image", "vllm/vllm-openai:v0.22.0", "env", alloc("expandable_segments:True,max_split_size_mb:512")), refusal: refusal022},
	} {
		t.Run(name, func(t *testing.T) {
			rsp := run(t, req(t, tc.xr, nil, nil))
			if rsp.refusal != tc.refusal {
				t.Errorf("refusal:\n got: %s\nwant: %s", rsp.refusal, tc.refusal)
			}
			hit := ""
			for _, w := range rsp.warnings {
				if strings.Contains(w, "PYTORCH_CUDA_ALLOC_CONF") {
					hit = w
				}
			}
			if hit != tc.warning {
				t.Errorf("warning:\n got: %s\nwant: %s", hit, tc.warning)
			}
		})
	}
}
