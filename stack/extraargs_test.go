package stack

import (
	"fmt"
	"testing"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/stack/validate"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// TestExtraArgsWired: an extraArgs item that vLLM's parser reads as an
// option the stack renders (its last occurrence wins) is refused, naming the
// item where the user wrote it and the field that sets the option, in
// whichever spelling vLLM takes for it.
func TestExtraArgsWired(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	const port = `the stack sets --port itself (the probes and the Service use port 8000 on every address); remove it`
	lmcache := func(args ...any) map[string]any {
		return with("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "lmcacheConfig.enabled", true, "vllmConfig.extraArgs", args)
	}
	oneModel := func(m map[string]any) map[string]any {
		m["name"], m["modelURL"] = "m", "org/m"
		return with("model", nil, "vllmConfig.image", "vllm/vllm-openai:v0.12.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12", "models", []any{m})
	}
	cases := map[string]struct {
		xr   map[string]any
		want string
	}{
		"LMCacheKVTransfer": {xr: lmcache("--seed=1", "--kv-transfer-config", `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_producer"}`),
			want: `spec.vllmConfig.extraArgs[1] "--kv-transfer-config" is refused: spec.lmcacheConfig.enabled sets --kv-transfer-config (the LMCache connector); remove it`},
		"LMCacheKVTransferAbbreviated": {xr: lmcache(`--kv-transfer={"kv_connector":"NixlConnector","kv_role":"kv_both"}`),
			want: `spec.vllmConfig.extraArgs[0] "--kv-transfer={\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}" is refused: vLLM's parser takes it for --kv-transfer-config (argparse reads a prefix of an option as the option), and spec.lmcacheConfig.enabled sets --kv-transfer-config (the LMCache connector); remove it`},
		"GroupKVTransferUnderscores": {xr: pdXR("disaggregation", map[string]any{"decode": map[string]any{"extraArgs": []any{"--seed=1", `--kv_transfer_config={"kv_connector":"NixlConnector","kv_role":"kv_both"}`}}}),
			want: `spec.disaggregation.decode.extraArgs[1] "--kv_transfer_config={\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}" is refused: vLLM's parser takes it for --kv-transfer-config, and spec.disaggregation sets --kv-transfer-config (each group's part in the KV cache transfer); remove it`},
		"ModelKVTransferDotted": {xr: pdXR("vllmConfig.extraArgs", []any{"--kv-transfer-config.kv_role=kv_both"}),
			want: `spec.vllmConfig.extraArgs[0] "--kv-transfer-config.kv_role=kv_both" is refused: vLLM's parser takes it for --kv-transfer-config, and spec.disaggregation sets --kv-transfer-config (each group's part in the KV cache transfer); remove it`},
		"GroupServedModelName": {xr: oneModel(map[string]any{"vllmConfig": map[string]any{"extraArgs": []any{"--seed=1"}},
			"disaggregation": map[string]any{"prefill": map[string]any{"extraArgs": []any{"--served-model-name", "other"}}}}),
			want: `spec.models[0].disaggregation.prefill.extraArgs[0] "--served-model-name" is refused: spec.models[0].servedModelName sets --served-model-name (else the stack serves the model as org/m, the name the router, the status and the autoscaler use); set it there, not in extraArgs`},
		"TopLevelGroupOfAModelsItem": {xr: with("model", nil, "vllmConfig.image", "vllm/vllm-openai:v0.12.0", "routerConfig.image", "lmcache/lmstack-router:v0.1.12",
			"disaggregation", map[string]any{"decode": map[string]any{"extraArgs": []any{"--port", "9000"}}},
			"models", []any{map[string]any{"name": "m", "modelURL": "org/m", "disaggregation": map[string]any{"prefill": map[string]any{"replicas": 2}}}}),
			want: `spec.disaggregation.decode.extraArgs[0] "--port" is refused: ` + port},
		"GroupTensorParallel": {xr: pdXR("disaggregation", map[string]any{"decode": map[string]any{"tensorParallelSize": 2, "resources": map[string]any{"gpu": "2"}, "extraArgs": []any{"--tensor-parallel-size=1"}}}),
			want: `spec.disaggregation.decode.extraArgs[0] "--tensor-parallel-size=1" is refused: spec.disaggregation.decode.tensorParallelSize sets --tensor-parallel-size; set it there, not in extraArgs`},
		"ModelFieldUnderscores": {xr: with("model.maxModelLen", 4096, "vllmConfig.extraArgs", []any{"--max_model_len", "8192"}),
			want: `spec.vllmConfig.extraArgs[0] "--max_model_len" is refused: vLLM's parser takes it for --max-model-len, and spec.model.maxModelLen sets --max-model-len; set it there, not in extraArgs`},
		"ShortAlias": {xr: with("vllmConfig.tensorParallelSize", 1, "vllmConfig.extraArgs", []any{"-tp", "2"}),
			want: `spec.vllmConfig.extraArgs[0] "-tp" is refused: vLLM's parser takes it for --tensor-parallel-size, and spec.vllmConfig.tensorParallelSize sets --tensor-parallel-size; set it there, not in extraArgs`},
		"ShortAliasAbbreviated": {xr: with("vllmConfig.tensorParallelSize", 1, "vllmConfig.extraArgs", []any{"-t=2"}),
			want: `spec.vllmConfig.extraArgs[0] "-t=2" is refused: vLLM's parser takes it for --tensor-parallel-size (argparse reads a prefix of an option as the option), and spec.vllmConfig.tensorParallelSize sets --tensor-parallel-size; set it there, not in extraArgs`},
		"NegatedSwitch": {xr: with("vllmConfig.enablePrefixCaching", true, "vllmConfig.extraArgs", []any{"--no-enable-prefix-caching"}),
			want: `spec.vllmConfig.extraArgs[0] "--no-enable-prefix-caching" is refused: vLLM's parser takes it for --enable-prefix-caching, and spec.vllmConfig.enablePrefixCaching sets --enable-prefix-caching; set it there, not in extraArgs`},
		"Model": {xr: with("vllmConfig.extraArgs", []any{"--model=org/other"}),
			want: `spec.vllmConfig.extraArgs[0] "--model=org/other" is refused: spec.model.modelURL sets the model (vllm serve's positional, which --model would replace); set it there, not in extraArgs`},
		"ItemsOwnList": {xr: with("model", nil, "vllmConfig.extraArgs", []any{"--seed=1"}, "models", []any{
			map[string]any{"name": "a", "modelURL": "org/a"},
			map[string]any{"name": "b", "modelURL": "org/b", "dtype": "half", "vllmConfig": map[string]any{"extraArgs": []any{"--seed=2", "--dtype=float16"}}}}),
			want: `spec.models[1].vllmConfig.extraArgs[1] "--dtype=float16" is refused: spec.models[1].dtype sets --dtype; set it there, not in extraArgs`},
		"PortAbbreviated": {xr: with("vllmConfig.extraArgs", []any{"--po=9000"}),
			want: `spec.vllmConfig.extraArgs[0] "--po=9000" is refused: vLLM's parser takes it for --port (argparse reads a prefix of an option as the option), and ` + port},
		"GroupPort": {xr: pdXR("disaggregation", map[string]any{"prefill": map[string]any{"extraArgs": []any{"--port=9000"}}}),
			want: `spec.disaggregation.prefill.extraArgs[0] "--port=9000" is refused: ` + port},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, tc.xr); got != prefix+tc.want {
				t.Errorf("refusal:\n got: %s\nwant: %s", got, prefix+tc.want)
			}
		})
	}
}

// TestExtraArgsMultiNode: with multiNode the options that place a pod in its
// group are the stack's, --headless is the workers' alone, and an
// --api-server-count would reach the headless workers, which vLLM refuses
// from 0.12.0 (the Ray form's workers run no vllm serve).
func TestExtraArgsMultiNode(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	const headless = "a headless engine starts no API server, so its probes never pass and the router cannot reach it; remove it"
	ray := func(args ...any) map[string]any {
		return mnXR("vllmConfig.image", "vllm/vllm-openai:v0.11.0", "vllmConfig.extraArgs", args)
	}
	cases := map[string]struct {
		xr   map[string]any
		want string
	}{
		"Nnodes": {xr: mnXR("vllmConfig.extraArgs", []any{"--nnodes=4"}),
			want: `spec.vllmConfig.extraArgs[0] "--nnodes=4" is refused: spec.multiNode sets --nnodes (the stack places every pod of a group itself, from the LeaderWorkerSet); remove it`},
		"NodeRankShort": {xr: mnXR("vllmConfig.extraArgs", []any{"--seed", "1", "-r", "1"}),
			want: `spec.vllmConfig.extraArgs[2] "-r" is refused: vLLM's parser takes it for --node-rank, and spec.multiNode sets --node-rank (the stack places every pod of a group itself, from the LeaderWorkerSet); remove it`},
		"NnodesConcatenated": {xr: mnXR("vllmConfig.extraArgs", []any{"-n4"}),
			want: `spec.vllmConfig.extraArgs[0] "-n4" is refused: vLLM's parser takes it for --nnodes, and spec.multiNode sets --nnodes (the stack places every pod of a group itself, from the LeaderWorkerSet); remove it`},
		"MasterAddr": {xr: mnXR("vllmConfig.extraArgs", []any{"--master_addr=10.0.0.1"}),
			want: `spec.vllmConfig.extraArgs[0] "--master_addr=10.0.0.1" is refused: vLLM's parser takes it for --master-addr, and spec.multiNode sets --master-addr (the stack places every pod of a group itself, from the LeaderWorkerSet); remove it`},
		"Backend": {xr: mnXR("vllmConfig.extraArgs", []any{"--distributed-executor-backend=ray"}),
			want: `spec.vllmConfig.extraArgs[0] "--distributed-executor-backend=ray" is refused: spec.multiNode sets --distributed-executor-backend (the stack places every pod of a group itself, from the LeaderWorkerSet); remove it`},
		"Headless": {xr: mnXR("vllmConfig.extraArgs", []any{"--headless"}),
			want: `spec.vllmConfig.extraArgs[0] "--headless" is refused: spec.multiNode sets --headless (on the worker pods: the leader serves the API); remove it`},
		"ItemHeadless": {xr: with("model", nil, "vllmConfig.image", "vllm/vllm-openai:v0.12.0", "storage.accessModes", []any{"ReadWriteMany"}, "models", []any{map[string]any{
			"name": "m", "modelURL": "org/m", "multiNode": map[string]any{"podsPerReplica": 2}, "resources": map[string]any{"gpu": "2"},
			"vllmConfig": map[string]any{"tensorParallelSize": 2, "pipelineParallelSize": 2, "extraArgs": []any{"--headless"}}}}),
			want: `spec.models[0].vllmConfig.extraArgs[0] "--headless" is refused: spec.models[0].multiNode sets --headless (on the worker pods: the leader serves the API); remove it`},
		"RayBackend": {xr: ray("--distributed-executor-backend", "mp"),
			want: `spec.vllmConfig.extraArgs[0] "--distributed-executor-backend" is refused: spec.multiNode sets --distributed-executor-backend (the stack places every pod of a group itself, from the LeaderWorkerSet); remove it`},
		"RayHeadless": {xr: ray("--headless"),
			want: `spec.vllmConfig.extraArgs[0] "--headless" is refused: ` + headless},
		"APIServerCount0120": {xr: mnXR("vllmConfig.extraArgs", []any{"--api-server-count=2"}),
			want: `spec.vllmConfig.extraArgs[0] "--api-server-count=2" is refused: with multiNode it reaches the worker pods too, which run vllm serve --headless, and vLLM 0.12.0 (vllmConfig.image docker.io/vllm/vllm-openai:v0.12.0) refuses an --api-server-count above 1 there ("api_server_count can't be set in headless mode"; any count from 0.16.0); the stack cannot give an option to the leader alone: remove it`},
		"APIServerCount0160": {xr: mnXR("vllmConfig.image", "vllm/vllm-openai:v0.16.0", "vllmConfig.extraArgs", []any{"-asc", "1"}),
			want: `spec.vllmConfig.extraArgs[0] "-asc" is refused: vLLM's parser takes it for --api-server-count, and with multiNode it reaches the worker pods too, which run vllm serve --headless, and vLLM 0.16.0 (vllmConfig.image docker.io/vllm/vllm-openai:v0.16.0) refuses any --api-server-count there ("--api-server-count=N cannot be used with --headless"); the stack cannot give an option to the leader alone: remove it`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, tc.xr); got != prefix+tc.want {
				t.Errorf("refusal:\n got: %s\nwant: %s", got, prefix+tc.want)
			}
		})
	}
	// The Ray form's leader alone runs vllm serve: several API servers are
	// the user's to ask for; so is a master port every pod shares.
	mustRun(t, req(t, ray("--api-server-count=2"), nil, nil))
	mustRun(t, req(t, mnXR("vllmConfig.extraArgs", []any{"--master-port=29600"}), nil, nil))
}

// TestExtraArgsHeadless: an engine that is not a multi-node worker must
// serve the API.
func TestExtraArgsHeadless(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	cases := map[string]struct {
		xr   map[string]any
		want string
	}{
		"Headless": {xr: with("vllmConfig.extraArgs", []any{"--headless"}),
			want: `spec.vllmConfig.extraArgs[0] "--headless" is refused: a headless engine starts no API server, so its probes never pass and the router cannot reach it; remove it (with multiNode the stack runs the workers of a group headless itself)`},
		"HeadlessAbbreviated": {xr: pdXR("disaggregation", map[string]any{"decode": map[string]any{"extraArgs": []any{"--head"}}}),
			want: `spec.disaggregation.decode.extraArgs[0] "--head" is refused: vLLM's parser takes it for --headless (argparse reads a prefix of an option as the option), and a headless engine starts no API server, so its probes never pass and the router cannot reach it; remove it (with multiNode the stack runs the workers of a group headless itself)`},
		"NoAPIServer": {xr: with("vllmConfig.extraArgs", []any{"--api-server-count", "0"}),
			want: `spec.vllmConfig.extraArgs[0] "--api-server-count" is refused: below 1 it starts no API server (vLLM runs the engine headless), so its probes never pass and the router cannot reach it; remove it`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, tc.xr); got != prefix+tc.want {
				t.Errorf("refusal:\n got: %s\nwant: %s", got, prefix+tc.want)
			}
		})
	}
}

// TestExtraArgsNotWired: options the stack does not render stay the user's,
// as do longer options that begin like one it renders.
func TestExtraArgsNotWired(t *testing.T) {
	for name, xr := range map[string]map[string]any{
		"Unset":   with("vllmConfig.extraArgs", []any{"--max-model-len=8192", "--dtype", "half", "-tp", "1", "--enable-prefix-caching", "--api-server-count=2"}),
		"Longer":  with("model.chatTemplate", "{{ x }}", "vllmConfig.maxLoras", 2, "model.enableLoRA", true, "vllmConfig.extraArgs", []any{"--chat-template-content-format", "openai", "--max-lora-rank=64", "--enable-lora-bias"}),
		"Values":  with("model.maxModelLen", 4096, "vllmConfig.extraArgs", []any{"--override-generation-config", `{"max_model_len":1}`, "--seed", "-1"}),
		"Old":     with("vllmConfig.image", "vllm/vllm-openai:v0.10.0", "vllmConfig.extraArgs", []any{"-n", "1"}),
		"KVOwn":   with("vllmConfig.extraArgs", []any{"--kv-transfer-config", `{"kv_connector":"OffloadingConnector","kv_role":"kv_both"}`}),
		"Grouped": pdXR("disaggregation", map[string]any{"prefill": map[string]any{"extraArgs": []any{"--max-num-batched-tokens=8192"}}}),
	} {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, xr); got != "" {
				t.Errorf("refused: %s", got)
			}
		})
	}
}

// TestWiredOptionsNamed: every option EngineArgs renders, for every kind of
// engine, has the field that sets it in WiredBy, so a refusal names it.
func TestWiredOptionsNamed(t *testing.T) {
	full := with("vllmConfig.image", "vllm/vllm-openai:v0.12.0",
		"model", map[string]any{"name": "m", "modelURL": "org/m", "revision": "main", "enableLoRA": true, "enableTool": true, "toolCallParser": "hermes",
			"chatTemplate": "{{ x }}", "trustRemoteCode": true, "dtype": "half", "maxNumSeqs": 8, "maxModelLen": 4096,
			"loraAdapters": []any{map[string]any{"name": "a", "path": "/data/a"}}},
		"vllmConfig.enableChunkedPrefill", false, "vllmConfig.enablePrefixCaching", true, "vllmConfig.tensorParallelSize", 1,
		"vllmConfig.pipelineParallelSize", 1, "vllmConfig.gpuMemoryUtilization", "0.9", "vllmConfig.maxLoras", 2, "lmcacheConfig.enabled", true)
	for name, xr := range map[string]map[string]any{
		"Full":      full,
		"Path":      with("model", map[string]any{"name": "m", "path": "/data/m"}),
		"Disagg":    pdXR("disaggregation", map[string]any{"decode": map[string]any{"tensorParallelSize": 2}}),
		"DisaggLMC": pdXR("disaggregation", map[string]any{"transfer": "lmcache"}),
		"MultiNode": mnXR(),
		"Ray":       mnXR("vllmConfig.image", "vllm/vllm-openai:v0.11.0"),
		"WideEP":    wideEPXR("0.22.0"),
		"DPLoRA":    dpXR("0.22.0", "model.enableLoRA", true),
	} {
		spec := asJSON[v1alpha1.ProductionStackSpec](t, xr["spec"])
		for _, e := range New(resolve.Identity{Name: "s", Namespace: "llm"}, &spec, nil).r.Engines {
			wired := validate.WiredOptions(e)
			if len(wired) < 4 {
				t.Errorf("%s: wired options %v: want at least --model, --served-model-name, --host and --port", name, wired)
			}
			for _, w := range wired {
				if got := validate.WiredBy(e, w); got == fmt.Sprintf("the stack sets %s itself; remove it", w.Name) {
					t.Errorf("%s: wiredBy names no field for %s: add it", name, w.Name)
				}
			}
		}
	}
}
