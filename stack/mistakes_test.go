package stack

import (
	"strings"
	"testing"
)

// TestLikelyMistakeWarnings: stacks the API accepts but that most likely do
// not do what was meant compose, with a warning that says why.
func TestLikelyMistakeWarnings(t *testing.T) {
	literal := func(name string) []any { return []any{map[string]any{"name": name, "value": "hf_xxx"}} }
	cases := map[string]struct {
		xr   map[string]any
		want []string
	}{
		"NoGPUWithCUDAImage": {
			xr:   with("resources", nil),
			want: []string{"spec: resources.gpu is unset and vllm/vllm-openai is vLLM built for NVIDIA GPUs, which fails at start without one: set resources.gpu, or use a CPU image of vLLM"},
		},
		"ZeroGPUsWithLMCacheImage": {
			xr:   with("resources.gpu", "0", "vllmConfig.image", "lmcache/vllm-openai:latest"),
			want: []string{"spec: resources.gpu is 0 and lmcache/vllm-openai is vLLM built for NVIDIA GPUs, which fails at start without one: set resources.gpu, or use a CPU image of vLLM"},
		},
		"NoGPUWithCPUImage": {xr: with("resources", nil, "vllmConfig.image", "myorg/vllm-cpu:0.9.2")},
		"HFTokenLiteral": {
			xr:   with("vllmConfig.hfTokenSecret.name", "hf", "env", literal("HF_TOKEN")),
			want: []string{"spec.env sets HF_TOKEN to a literal value, stored in plain text in the Deployment: put it in a Secret and use vllmConfig.hfTokenSecret or env valueFrom.secretKeyRef"},
		},
		"HFTokenFromSecret": {xr: with("env", []any{map[string]any{"name": "HF_TOKEN", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}}})},
		"APIKeyLiteralOnRouter": {
			xr:   with("routerConfig.env", literal("VLLM_API_KEY")),
			want: []string{"spec.routerConfig.env sets VLLM_API_KEY to a literal value, stored in plain text in the Deployment: put it in a Secret and use routerConfig.apiKeySecret or env valueFrom.secretKeyRef"},
		},
		"ModelPathOnModelCache": {xr: with("model.path", "/data/models/m")},
		"ModelPathOnExtraVolume": {xr: with("model.path", "/models/m", "storage.extraVolumes", []any{map[string]any{"name": "weights", "emptyDir": map[string]any{}}},
			"storage.extraVolumeMounts", []any{map[string]any{"name": "weights", "mountPath": "/models/"}})},
		"ModelPathOutsideMounts": {
			xr:   with("model.path", "/models/m"),
			want: []string{"spec.model.path /models/m is not under a volume mounted in the engine container: vLLM finds the model only if the image contains it; mount it with storage (at /data) or storage.extraVolumeMounts"},
		},
		"ModelPathWithoutStorage": {
			xr:   with("model.path", "/data/m", "storage.enabled", false),
			want: []string{"spec.model.path /data/m is not under a volume mounted in the engine container: vLLM finds the model only if the image contains it; mount it with storage (at /data) or storage.extraVolumeMounts"},
		},
		"ModelPathPrefixIsNotAMount": {
			xr:   with("model.path", "/database/m"),
			want: []string{"spec.model.path /database/m is not under a volume mounted in the engine container: vLLM finds the model only if the image contains it; mount it with storage (at /data) or storage.extraVolumeMounts"},
		},
		"WorkerPortWithoutKVAware": {
			xr:   with("lmcacheConfig.enabled", true, "lmcacheConfig.workerHeartbeatTime", 5),
			want: []string{"spec.lmcacheConfig: workerPort and workerHeartbeatTime have no effect without routerType kvaware and LMCache enabled"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := warningsOf(t, tc.xr); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("warnings:\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
}

// TestServerFlagsRefused: probes and Services reach engines and the router
// on port 8000 of every address; extra arguments that move them are refused.
func TestServerFlagsRefused(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	cases := map[string]struct {
		xr   map[string]any
		want string
	}{
		"EnginePort": {
			xr:   with("vllmConfig.extraArgs", []any{"--block-size", "16", "--port", "9000"}),
			want: prefix + `spec.vllmConfig.extraArgs[2] "--port" is refused: the stack sets --port itself (the probes and the Service use port 8000 on every address); remove it`,
		},
		"EngineHostWithValue": {
			xr:   with("model", nil, "models", []any{map[string]any{"name": "m", "modelURL": "org/m", "vllmConfig": map[string]any{"extraArgs": []any{"--host=127.0.0.1"}}}}),
			want: prefix + `spec.models[0].vllmConfig.extraArgs[0] "--host=127.0.0.1" is refused: the stack sets --host itself (the probes and the Service use port 8000 on every address); remove it`,
		},
		"RouterPort": {
			xr:   with("routerConfig.extraArgs", []any{"--port=8080"}),
			want: prefix + `spec.routerConfig.extraArgs[0] "--port=8080" is refused: the stack sets --port itself (the probes and the Service use port 8000 on every address); remove it`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := fatal(t, run(t, req(t, tc.xr, nil, nil))); got != tc.want {
				t.Errorf("Fatal message:\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
	// Flags that only begin like them are the user's to pass.
	mustRun(t, req(t, with("vllmConfig.extraArgs", []any{"--portable", "--hostname-override"}), nil, nil))
}
