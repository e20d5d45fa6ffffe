package stack

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// TestPrecisePrefixRender: example/stacks/precise-prefix.yaml renders the
// engines' KV events (--kv-events-config with the topic the picker parses,
// on port 5557), their block size and hash seed, and the picker's precise
// pipeline on llm-d v0.10.0 with the same block size and seed, the model's
// engine Service as its tokenizer, and the other scorers' weights
// (PRECISE-PREFIX.md).
func TestPrecisePrefixRender(t *testing.T) {
	rsp := mustRun(t, req(t, stacktest.LoadXR(t, "../example/stacks/precise-prefix.yaml", ""), nil, nil))
	pod := desired(t, rsp, "engine-chat", &appsv1.Deployment{}).Spec.Template.Spec
	c := pod.Containers[0]
	got := slices.DeleteFunc(slices.Clone(c.Args), func(a string) bool {
		return !strings.HasPrefix(a, "--block-size") && !strings.HasPrefix(a, "--kv-events")
	})
	want := []string{
		"--block-size=16",
		`--kv-events-config={"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557","topic":"kv@$(POD_IP):8000@Qwen/Qwen3-8B"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("engine's KV events arguments (-want +got):\n%s", diff)
	}
	if c.Env[0].Name != "POD_IP" {
		t.Errorf("the engine's first variable is %s, want POD_IP, which the topic's $(POD_IP) expands from", c.Env[0].Name)
	}
	if !slices.Contains(c.Env, corev1.EnvVar{Name: "PYTHONHASHSEED", Value: "0"}) {
		t.Errorf("engine has no PYTHONHASHSEED=0, the picker's hashSeed: %v", c.Env)
	}
	if !slices.Contains(c.Ports, corev1.ContainerPort{Name: "kv-events", ContainerPort: 5557, Protocol: corev1.ProtocolTCP}) {
		t.Errorf("engine does not declare the kv-events port 5557: %v", c.Ports)
	}
	cfg := desired(t, rsp, "engine-chat-epp-config", &corev1.ConfigMap{}).Data["config.yaml"]
	if diff := cmp.Diff(precisePickerConfigV010, cfg); diff != "" {
		t.Errorf("picker configuration (-want +got):\n%s", diff)
	}
}

const precisePickerConfigV010 = `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
  parameters:
    prefixMatchInfoProducerName: precise-prefix-cache-producer
- type: token-producer
  parameters:
    modelName: "Qwen/Qwen3-8B"
    vllm:
      url: http://precise-chat-engine-service.llm.svc:80
- type: endpoint-notification-source
- type: precise-prefix-cache-producer
  parameters:
    tokenProcessorConfig:
      blockSizeTokens: 16
      hashSeed: "0"
    kvEventsConfig:
      topicFilter: "kv@"
      concurrency: 4
      discoverPods: true
      podDiscoveryConfig:
        socketPort: 5557
- type: metrics-data-source
- type: core-metrics-extractor
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: kv-cache-utilization-scorer
    weight: 2
  - pluginRef: prefix-cache-scorer
    weight: 3
dataLayer:
  sources:
  - pluginRef: metrics-data-source
    extractors:
    - pluginRef: core-metrics-extractor
  - pluginRef: endpoint-notification-source
    extractors:
    - pluginRef: precise-prefix-cache-producer
`

// preciseXR is one model behind llm-d's picker with precise prefix-cache
// routing, on an engine release that has the render endpoints.
func preciseXR(kv ...any) map[string]any {
	return gieXR(append([]any{"vllmConfig.image", "vllm/vllm-openai:v0.27.1", "inferenceExtension.picker.prefixCache.mode", "Precise"}, kv...)...)
}

// TestPrecisePrefixPerRelease: llm-d v0.9.0 reads the same pipeline as
// v0.10.0 (the samples at both tags, PRECISE-PREFIX.md), apiVersion
// llm-d.ai/v1alpha1; an Estimated stack renders no KV events, block size or
// hash seed, and no precise plugin.
func TestPrecisePrefixPerRelease(t *testing.T) {
	for _, tc := range []struct {
		name, picker, mode string
		precise            bool
	}{
		{"v0.9.0", "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0", "Precise", true},
		{"v0.10.0", "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0", "Precise", true},
		{"Estimated", "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0", "Estimated", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rsp := mustRun(t, preciseXRAt(tc.picker, tc.mode, t))
			cfg := desired(t, rsp, "engine-m-epp-config", &corev1.ConfigMap{}).Data["config.yaml"]
			c := desired(t, rsp, "engine-m", &appsv1.Deployment{}).Spec.Template.Spec.Containers[0]
			events := slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, "--kv-events-config=") })
			blocks := slices.Contains(c.Args, "--block-size=16")
			seed := slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "PYTHONHASHSEED" })
			plugins := strings.Contains(cfg, "- type: precise-prefix-cache-producer\n") && strings.Contains(cfg, "- type: token-producer\n") &&
				strings.Contains(cfg, "  - pluginRef: endpoint-notification-source\n    extractors:\n    - pluginRef: precise-prefix-cache-producer\n")
			if events != tc.precise || blocks != tc.precise || seed != tc.precise || plugins != tc.precise {
				t.Errorf("KV events %v, block size %v, hash seed %v, precise plugins %v; want all %v\n%s", events, blocks, seed, plugins, tc.precise, cfg)
			}
			if !strings.HasPrefix(cfg, "apiVersion: llm-d.ai/v1alpha1\n") {
				t.Errorf("configuration's apiVersion:\n%s", cfg)
			}
		})
	}
}

func preciseXRAt(picker, mode string, t *testing.T) request {
	return req(t, gieXR("vllmConfig.image", "vllm/vllm-openai:v0.27.1", "inferenceExtension.picker.image", picker, "inferenceExtension.picker.prefixCache.mode", mode), nil, nil)
}

// TestPrecisePrefixRefused: each picker, engine or combination the facts
// rule out is refused with the field, the reason and the fix.
func TestPrecisePrefixRefused(t *testing.T) {
	const mode = "spec.inferenceExtension.picker.prefixCache.mode"
	for name, tc := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"GAIE": {preciseXR("inferenceExtension.picker.image", "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0"),
			mode + " Precise needs llm-d's endpoint picker, and the stack runs gaie 1.5.0, which has no KV-events index (the precise-prefix-cache plugins are llm-d's): use ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.10.0 or remove prefixCache"},
		"LLMDv080": {preciseXR("inferenceExtension.picker.image", "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.8.0"),
			mode + " Precise needs llm-d's picker 0.9.0 or later, and the stack runs llm-d 0.8.0: its images are built without embedded tokenizers, so its precise scorer tokenizes only through a tokenizer sidecar over a Unix socket, which the function does not run; from 0.9.0 the picker tokenizes through the engines' own render endpoints: use picker.image ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0 or later"},
		"LLMDv060": {preciseXR("inferenceExtension.picker.image", "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.6.0"),
			mode + " Precise needs llm-d's picker 0.9.0 or later, and the stack runs llm-d 0.6.0: its images are built without embedded tokenizers"},
		"NoPrefixWeight": {preciseXR("inferenceExtension.picker.scorers.prefixCache", 0),
			mode + " Precise feeds the prefix-cache scorer, and spec.inferenceExtension.picker.scorers.prefixCache is 0, which leaves it out: give it a weight above 0 (default 3), or remove prefixCache"},
		"VLLMBefore0160": {preciseXR("vllmConfig.image", "vllm/vllm-openai:v0.12.0"),
			"spec: " + mode + " Precise needs vLLM 0.16.0 or later on every engine, and the engine runs vLLM 0.12.0 (vllmConfig.image docker.io/vllm/vllm-openai:v0.12.0), without the /v1/completions/render and /v1/chat/completions/render the picker tokenizes each request through (vLLM PR #32473): use a newer image, or remove prefixCache"},
		"Disaggregated": {preciseXR("disaggregation", map[string]any{}),
			"spec: " + mode + " Precise is not rendered for a disaggregated model: its pool's endpoints are the decode pods' routing sidecars and the prefill pods, whose KV events the function does not wire to the prefill and decode profiles: remove prefixCache or disaggregation"},
		"DataParallel": {preciseXR("vllmConfig.dataParallelSize", 2, "vllmConfig.tensorParallelSize", 1, "resources.gpu", "2"),
			"spec: " + mode + " Precise cannot see every rank of vllmConfig.dataParallelSize 2: each rank publishes its KV events on port 5557 plus its rank, and the picker subscribes to one port per endpoint of its pool, which has one endpoint per pod: remove dataParallelSize or prefixCache"},
		"NoPrefixCaching": {preciseXR("vllmConfig.enablePrefixCaching", false),
			"spec.vllmConfig.enablePrefixCaching is false, and " + mode + " Precise routes on the blocks the engines cache and announce, which they do only with prefix caching: remove enablePrefixCaching: false, or prefixCache"},
		"AtInName": {preciseXR("model.servedModelName", "qwen@2"),
			`the served model name "qwen@2" has an '@', and ` + mode + " Precise sends it in the KV events' topic kv@<pod>@<model>, which the picker splits at '@': serve the model under a name without one"},
		"BlockSizeInExtraArgs": {preciseXR("vllmConfig.extraArgs", []any{"--block-size=32"}),
			`spec.vllmConfig.extraArgs[0] "--block-size=32" is refused: spec.inferenceExtension.picker.prefixCache.mode Precise sets --block-size (the engines' KV events and block size, which the picker's must equal); remove it`},
		"EventsInExtraArgs": {preciseXR("vllmConfig.extraArgs", []any{"--kv-events-config", "{}"}),
			`spec.vllmConfig.extraArgs[0] "--kv-events-config" is refused: spec.inferenceExtension.picker.prefixCache.mode Precise sets --kv-events-config`},
		"BadMode": {gieXR("inferenceExtension.picker.prefixCache.mode", "Exact"), mode},
	} {
		t.Run(name, func(t *testing.T) {
			got := refusal(t, tc.xr)
			if !strings.Contains(got, tc.want) {
				t.Errorf("refusal\n%s\nwant it to hold\n%s", got, tc.want)
			}
		})
	}
}

// TestPrecisePrefixExtraArgsWithoutIt: without precise routing the user's
// own --block-size and --kv-events-config stay theirs.
func TestPrecisePrefixExtraArgsWithoutIt(t *testing.T) {
	rsp := mustRun(t, req(t, gieXR("vllmConfig.extraArgs", []any{"--block-size=32", "--kv-events-config={}"}), nil, nil))
	args := desired(t, rsp, "engine-m", &appsv1.Deployment{}).Spec.Template.Spec.Containers[0].Args
	if got := args[len(args)-2:]; !slices.Equal(got, []string{"--block-size=32", "--kv-events-config={}"}) {
		t.Errorf("extraArgs' tail %v", got)
	}
}

// TestPrecisePrefixContract renders example/stacks/precise-prefix.yaml with
// both llm-d releases that have the pipeline and checks each picker
// against the facts and its engines (checkPickerPrecise); then breaks one
// side of each agreement and sees it caught.
func TestPrecisePrefixContract(t *testing.T) {
	load := func(v string) rendered {
		xr := stacktest.LoadXR(t, "../example/stacks/precise-prefix.yaml", "")
		stacktest.SetPath(xr, "spec.inferenceExtension.picker.image", "ghcr.io/llm-d/llm-d-router-endpoint-picker:v"+v)
		rsp := reconciled(t, xr, nil)
		if rsp.refusal != "" {
			t.Fatal(rsp.refusal)
		}
		return renderedOf(rsp)
	}
	check := func(r rendered) []string {
		var out []string
		for _, d := range r.withComponent(names.ComponentPicker) {
			out = append(out, checkPicker(d, r, "0.27.1")...)
		}
		return out
	}
	for _, v := range []string{"0.9.0", "0.10.0"} {
		if p := check(load(v)); len(p) > 0 {
			t.Errorf("llm-d v%s: %v", v, p)
		}
	}
	for name, tc := range map[string]struct {
		edit func(r rendered)
		want string
	}{
		"BlockSize": {func(r rendered) { engineArgs(r)[slices.Index(engineArgs(r), "--block-size=16")] = "--block-size=32" },
			`precise-chat-deployment-vllm's --block-size "32" differs from the picker's blockSizeTokens 16`},
		"Seed": {func(r rendered) {
			c := &r.deployments[engineIndex(r)].Spec.Template.Spec.Containers[0]
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "PYTHONHASHSEED" })
		}, `precise-chat-deployment-vllm's PYTHONHASHSEED differs from the picker's hashSeed "0"`},
		"Port": {func(r rendered) { replaceInConfig(r, "socketPort: 5557", "socketPort: 5558") },
			`precise-chat-deployment-vllm publishes at "tcp://*:5557", and the picker dials its pod at port 5558`},
		"Model": {func(r rendered) { replaceInConfig(r, `modelName: "Qwen/Qwen3-8B"`, `modelName: "qwen"`) },
			`precise-chat-deployment-vllm's KV events topic "kv@$(POD_IP):8000@Qwen/Qwen3-8B", want "kv@$(POD_IP):8000@qwen"`},
		"URL": {func(r rendered) { replaceInConfig(r, "svc:80", "svc:8080") },
			"configuration: the token-producer's vllm.url http://precise-chat-engine-service.llm.svc:8080 is no Service port of the pool's engines' API"},
		"ScorerEstimates": {func(r rendered) {
			replaceInConfig(r, "    prefixMatchInfoProducerName: precise-prefix-cache-producer\n", "")
		},
			`configuration: the prefix-cache-scorer reads the match of "", not the precise producer's: it scores by its own estimate`},
		"UnknownParameter": {func(r rendered) {
			replaceInConfig(r, "      concurrency: 4\n", "      concurrency: 4\n      engineType: vllm\n")
		},
			"configuration: llm-d 0.10.0's precise-prefix-cache-producer has no parameter kvEventsConfig.engineType"},
	} {
		t.Run(name, func(t *testing.T) {
			r := load("0.10.0")
			tc.edit(r)
			if got := check(r); !slices.Contains(got, tc.want) {
				t.Errorf("problems %q\nwant %q", got, tc.want)
			}
		})
	}
}

func engineIndex(r rendered) int {
	return slices.IndexFunc(r.deployments, func(d appsv1.Deployment) bool { return d.Name == "precise-chat-deployment-vllm" })
}

func engineArgs(r rendered) []string {
	return r.deployments[engineIndex(r)].Spec.Template.Spec.Containers[0].Args
}

func replaceInConfig(r rendered, old, new string) {
	for i := range r.configMaps {
		if cfg, ok := r.configMaps[i].Data["config.yaml"]; ok {
			r.configMaps[i].Data["config.yaml"] = strings.Replace(cfg, old, new, 1)
		}
	}
}

// TestPrecisePrefixFacts: the releases upstream/precise.go renders from are
// those the contract tables give: vLLM's --kv-events-config, and llm-d's
// precise producer, token-producer and notification source.
func TestPrecisePrefixFacts(t *testing.T) {
	first := func(file string, cols int, match func(row []string) bool, col int) string {
		rows, err := stacktest.ReadTSV(filepath.Join(stacktest.UpstreamDir, file), cols)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			if match(r) {
				return r[col]
			}
		}
		t.Fatalf("%s: no row", file)
		return ""
	}
	if got := first("vllm-flags.tsv", 6, func(r []string) bool { return r[0] == "--kv-events-config" }, 1); got != upstream.VLLMKVEventsSince.String() {
		t.Errorf("--kv-events-config from %s in the facts, %v in upstream", got, upstream.VLLMKVEventsSince)
	}
	for _, typ := range []string{upstream.PickerPrecisePrefixProducer, upstream.PickerTokenProducer, upstream.PickerEndpointNotification} {
		if got := first("epp-plugins.tsv", 5, func(r []string) bool { return r[0] == "llm-d" && r[1] == typ }, 2); got != upstream.PickerPrecisePrefixSince.String() {
			t.Errorf("%s from llm-d %s in the facts, %v in upstream", typ, got, upstream.PickerPrecisePrefixSince)
		}
	}
}

// TestPrecisePrefixPerModel: each model's picker tokenizes through its own
// model's engines and subscribes under its own model's name.
func TestPrecisePrefixPerModel(t *testing.T) {
	xr := preciseXR("model", nil, "models", []any{
		map[string]any{"name": "a", "modelURL": "org/a"},
		map[string]any{"name": "b", "modelURL": "org/b", "servedModelName": "bee"},
	})
	rsp := mustRun(t, req(t, xr, nil, nil))
	for _, m := range []struct{ id, served string }{{"a", "org/a"}, {"b", "bee"}} {
		cfg := desired(t, rsp, "engine-"+m.id+"-epp-config", &corev1.ConfigMap{}).Data["config.yaml"]
		want := "    modelName: \"" + m.served + "\"\n    vllm:\n      url: http://s-" + m.id + "-engine-service.llm.svc:80\n"
		if !strings.Contains(cfg, want) {
			t.Errorf("model %s's picker configuration lacks\n%s\n%s", m.id, want, cfg)
		}
		args := desired(t, rsp, "engine-"+m.id, &appsv1.Deployment{}).Spec.Template.Spec.Containers[0].Args
		if !slices.ContainsFunc(args, func(a string) bool { return strings.Contains(a, `"topic":"kv@$(POD_IP):8000@`+m.served+`"`) }) {
			t.Errorf("model %s's engine does not publish under %s: %v", m.id, m.served, args)
		}
	}
}
