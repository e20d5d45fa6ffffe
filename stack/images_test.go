package stack

import (
	"strings"
	"testing"

	"github.com/distribution/reference"
	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/xrd"
)

// TestImageReferences holds every image field, of the spec and of the
// Composition's Input, to the grammar the kubelet parses (issue 38 §4): an
// upper-case repository, a bad tag or a registry that is no host is refused
// naming the field; a valid reference of each form passes.
func TestImageReferences(t *testing.T) {
	const (
		spec  = "invalid ProductionStack: "
		input = "invalid Input in the Composition: the function's Input "
		fix   = ": use a lower-case repository with an optional registry host[:port] and a tag or a digest, such as docker.io/vllm/vllm-openai:v0.9.2"
	)
	upper := "(invalid reference format: repository name (Vllm-openai) must be lowercase)"
	for name, tc := range map[string]struct {
		xr, input map[string]any
		want      string
	}{
		"VLLMConfig":        {xr: with("vllmConfig.image", "Vllm/Vllm-openai:v0.9.2"), want: spec + `spec.vllmConfig.image "Vllm/Vllm-openai:v0.9.2" is not an image reference the kubelet can pull ` + upper + fix},
		"VLLMConfigOfModel": {xr: with("model", nil, "models", []any{map[string]any{"name": "a", "modelURL": "org/a", "vllmConfig": map[string]any{"image": "Vllm/Vllm-openai"}}}), want: spec + `spec.models[0].vllmConfig.image "Vllm/Vllm-openai" is not an image reference the kubelet can pull ` + upper + fix},
		"BadTag":            {xr: with("vllmConfig.image", "vllm/vllm-openai:-latest"), want: spec + `spec.vllmConfig.image "vllm/vllm-openai:-latest" is not an image reference the kubelet can pull (invalid reference format)` + fix},
		"BadDigest":         {xr: with("vllmConfig.image", "vllm/vllm-openai@sha256:abc"), want: spec + `spec.vllmConfig.image "vllm/vllm-openai@sha256:abc" is not an image reference the kubelet can pull (invalid reference format)` + fix},
		"Registry":          {xr: with("vllmConfig.imagePullRegistry", "Registry.example.com/Mirror"), want: spec + `spec.vllmConfig.imagePullRegistry "Registry.example.com/Mirror" is not an image registry: use a registry host with an optional port and a lower-case path, such as docker.io or registry.example.com:5000/mirror`},
		"RegistryScheme":    {xr: with("vllmConfig.imagePullRegistry", "https://registry.example.com"), want: spec + `spec.vllmConfig.imagePullRegistry "https://registry.example.com" is not an image registry: use a registry host with an optional port and a lower-case path, such as docker.io or registry.example.com:5000/mirror`},
		"LoRASidecar":       {xr: with("model.enableLoRA", true, "loraSidecar.image", "LMCache/lmstack-sidecar"), want: spec + `spec.loraSidecar.image "LMCache/lmstack-sidecar" is not an image reference the kubelet can pull (its first component "LMCache" has upper-case letters, so it is read as a registry host)` + fix},
		"InitContainer":     {xr: with("pod.initContainers", []any{map[string]any{"name": "init", "image": "BusyBox"}}), want: spec + `spec.pod.initContainers[0].image "BusyBox" is not an image reference the kubelet can pull (invalid reference format: repository name (library/BusyBox) must be lowercase)` + fix},
		"Router":            {xr: with("routerConfig.image", "LMCache/lmstack-router:0.1.12"), want: spec + `spec.routerConfig.image "LMCache/lmstack-router:0.1.12" is not an image reference the kubelet can pull (its first component "LMCache" has upper-case letters, so it is read as a registry host)` + fix},
		"CacheServer":       {xr: with("lmcacheConfig", map[string]any{"enabled": true, "server": map[string]any{"image": "LMCache/vllm-openai:latest"}}), want: spec + `spec.lmcacheConfig.server.image "LMCache/vllm-openai:latest" is not an image reference the kubelet can pull (its first component "LMCache" has upper-case letters, so it is read as a registry host)` + fix},
		"Picker":            {xr: gieXR("inferenceExtension.picker", map[string]any{"image": "ghcr.io/LLM-D/llm-d-router-endpoint-picker:v0.10.0"}), want: spec + `spec.inferenceExtension.picker.image "ghcr.io/LLM-D/llm-d-router-endpoint-picker:v0.10.0" is not an image reference the kubelet can pull (invalid reference format: repository name (LLM-D/llm-d-router-endpoint-picker) must be lowercase)` + fix},
		"RoutingSidecar":    {xr: gieXR("inferenceExtension.routingSidecar", map[string]any{"image": "ghcr.io/llm-d/Sidecar:v0.10.0"}), want: spec + `spec.inferenceExtension.routingSidecar.image "ghcr.io/llm-d/Sidecar:v0.10.0" is not an image reference the kubelet can pull (invalid reference format: repository name (llm-d/Sidecar) must be lowercase)` + fix},
		"InputEngine":       {xr: minimalXR(), input: map[string]any{"engine": map[string]any{"image": "Vllm/Vllm-openai"}}, want: input + `engine.image "Vllm/Vllm-openai" is not an image reference the kubelet can pull ` + upper + fix},
		"InputRegistry":     {xr: minimalXR(), input: map[string]any{"engine": map[string]any{"imagePullRegistry": "registry.example.com:port"}}, want: input + `engine.imagePullRegistry "registry.example.com:port" is not an image registry: use a registry host with an optional port and a lower-case path, such as docker.io or registry.example.com:5000/mirror`},
		"InputRouter":       {xr: minimalXR(), input: map[string]any{"router": map[string]any{"image": "LMCache/lmstack-router"}}, want: input + `router.image "LMCache/lmstack-router" is not an image reference the kubelet can pull (its first component "LMCache" has upper-case letters, so it is read as a registry host)` + fix},
		"InputRouterTag":    {xr: minimalXR(), input: map[string]any{"router": map[string]any{"tag": "v0.1.12+build"}}, want: input + `router.tag "v0.1.12+build" is not an image tag: use at most 128 letters, digits, '_', '.' or '-', not starting with '.' or '-', such as v0.1.12`},
		"InputAdapterSync":  {xr: minimalXR(), input: map[string]any{"adapterSync": map[string]any{"image": "xpkg.crossplane.io/VLLM/function-vllm-stack:v0.4.0"}}, want: input + `adapterSync.image "xpkg.crossplane.io/VLLM/function-vllm-stack:v0.4.0" is not an image reference the kubelet can pull (invalid reference format: repository name (VLLM/function-vllm-stack) must be lowercase)` + fix},
	} {
		t.Run(name, func(t *testing.T) {
			if got := fatal(t, run(t, req(t, tc.xr, tc.input, nil))); got != tc.want {
				t.Errorf("Fatal message:\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
	for _, ok := range []string{
		"vllm/vllm-openai", "vllm/vllm-openai:v0.9.2", "registry.example.com:5000/team/vllm:v1",
		"localhost/vllm@sha256:" + sha256Hex, "docker.io/vllm/vllm-openai:latest@sha256:" + sha256Hex,
	} {
		t.Run("Accepts "+ok, func(t *testing.T) {
			mustRun(t, req(t, with("vllmConfig.image", ok, "vllmConfig.imagePullRegistry", "registry.example.com:5000/mirror"), nil, nil))
		})
	}
}

const sha256Hex = "7cc4b5aefd1d0cadf8d97d4350462ba51c694ebca145b08d7d41b41acc8db5aa"

// TestXRDImagePattern: every image field of the XRD carries the reference
// grammar of github.com/distribution/reference (empty allowed: the
// default), so the API server refuses what the kubelet could not pull;
// TestXRDRules checks the function refuses whatever the pattern refuses.
func TestXRDImagePattern(t *testing.T) {
	want := "^(" + strings.TrimSuffix(strings.TrimPrefix(reference.ReferenceRegexp.String(), "^"), "$") + ")?$"
	var schema map[string]any
	if err := yaml.Unmarshal(xrd.Definition, &schema); err != nil {
		t.Fatal(err)
	}
	var images []string
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch v := v.(type) {
		case []any:
			for _, item := range v {
				walk(at+"[]", item)
			}
		case map[string]any:
			for k, sub := range v {
				if m, ok := sub.(map[string]any); ok && k == "image" && m["type"] == "string" {
					images = append(images, at)
					if got := m["pattern"]; got != want {
						t.Errorf("%s.image pattern %v, want the reference grammar %s", at, got, want)
					}
				}
				walk(at+"."+k, sub)
			}
		}
	}
	walk("", schema)
	// vllmConfig, loraSidecar, routerConfig, lmcacheConfig.server,
	// picker, routingSidecar; each twice, in spec and in models[]/groups
	// that repeat the engine blocks.
	if len(images) < 6 {
		t.Errorf("found image fields %v, want at least the 6 the XRD has", images)
	}
}
