package stack

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/xrd"
)

// Every block of the spec that configures pods is checked where it is
// written: the top level, a models[] item, a disaggregation group, the
// router's and the cache server's. TestEveryBlockChecked finds the blocks in
// the XRD, not in the code, so a block added to the API is walked without a
// change here and fails until validation covers it: a value that would make
// the function panic or compose an object the API server refuses is a Fatal
// that names the field where the user wrote it (issue 29).

// probe is a hostile value of a field found in a block, and the start of
// the message that must refuse it.
type probe struct {
	field string // below the block
	value any
	want  string // after the field's path
}

// blockProbes are the probes of a block schema: its resources, node
// selector, tolerations and extra arguments, wherever the block holds them.
func blockProbes(s map[string]any) []probe {
	props, _ := s["properties"].(map[string]any)
	var out []probe
	if r, ok := props["resources"].(map[string]any); ok {
		if rp, _ := r["properties"].(map[string]any); rp["memory"] != nil {
			out = append(out, probe{"resources.memory", "lots", ` "lots" is not a Kubernetes quantity`})
		}
	}
	if _, ok := props["nodeSelector"]; ok {
		out = append(out, probe{"nodeSelector", map[string]any{"bad key!": "v"}, ` key "bad key!" is not a valid label key`})
	}
	if _, ok := props["tolerations"]; ok {
		out = append(out, probe{"tolerations", []any{map[string]any{"key": "k", "operator": "Exists", "value": "v"}}, `[0].value must be empty when operator is Exists`})
	}
	if _, ok := props["extraArgs"]; ok {
		out = append(out, probe{"extraArgs", []any{"--port=9000"}, `[0] "--port=9000" is refused`})
	}
	return out
}

// probedBlocks walks a schema and returns the probes of every block below
// at, with their full paths.
func probedBlocks(s map[string]any, at fieldPath) map[string][]probe {
	out := map[string][]probe{}
	if ps := blockProbes(s); len(ps) > 0 {
		out[at.String()] = ps
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for k, v := range props {
			maps.Copy(out, probedBlocks(v.(map[string]any), at.field(k)))
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		maps.Copy(out, probedBlocks(items, at.item()))
	}
	return out
}

// blockXR is a stack in which the block at path is in force: below
// spec.models, a list of one model; below disaggregation, a disaggregated
// model on releases that can; below the cache server, LMCache with its
// server.
func blockXR(path string) map[string]any {
	at := fieldPath{{key: "spec", kind: '.'}}
	if strings.HasPrefix(path, "spec.models") {
		at = at.field("models")
	}
	xr := baseXR(at)
	spec := xr["spec"].(map[string]any)
	if strings.Contains(path, ".disaggregation.") {
		stacktest.SetPath(xr, "spec.vllmConfig.image", "vllm/vllm-openai:v0.12.0")
		stacktest.SetPath(xr, "spec.routerConfig.image", "lmcache/lmstack-router:v0.1.12")
		model := spec
		if m, ok := spec["models"].([]any); ok {
			model = m[0].(map[string]any)
		}
		model["disaggregation"] = map[string]any{}
	}
	if strings.HasPrefix(path, "spec.lmcacheConfig.server") {
		stacktest.SetPath(xr, "spec.lmcacheConfig.enabled", true)
		stacktest.SetPath(xr, "spec.lmcacheConfig.server.enabled", true)
	}
	return xr
}

// misplaced are blocks the XRD takes where the function refuses them
// whole, and the refusal that names them.
var misplaced = map[string]string{
	"spec.models[0].lmcacheConfig.server.scheduling": "spec.models[0].lmcacheConfig.server: the cache server is shared by the stack: set it in spec.lmcacheConfig.server",
}

func TestEveryBlockChecked(t *testing.T) {
	var schema map[string]any
	if err := yaml.Unmarshal(xrd.Definition, &schema); err != nil {
		t.Fatal(err)
	}
	vs := schema["spec"].(map[string]any)["versions"].([]any)
	spec := vs[0].(map[string]any)["schema"].(map[string]any)["openAPIV3Schema"].(map[string]any)["properties"].(map[string]any)["spec"].(map[string]any)
	blocks := probedBlocks(spec, fieldPath{{key: "spec", kind: '.'}})

	// The walk must find at least the blocks the engines are merged from.
	for _, p := range []string{"spec", "spec.scheduling", "spec.vllmConfig", "spec.models[0]", "spec.models[0].scheduling",
		"spec.disaggregation.prefill", "spec.disaggregation.decode", "spec.models[0].disaggregation.decode", "spec.routerConfig"} {
		if blocks[p] == nil {
			t.Errorf("the XRD walk found no probes in %s", p)
		}
	}
	for _, path := range slices.Sorted(maps.Keys(blocks)) {
		for _, pr := range blocks[path] {
			t.Run(path+"."+pr.field, func(t *testing.T) {
				xr := blockXR(path)
				set(xr, path+"."+pr.field, pr.value)
				got := fatal(t, run(t, req(t, xr, nil, nil)))
				if m, ok := misplaced[path]; ok && strings.Contains(got, m) {
					return
				}
				if want := path + "." + pr.field + pr.want; !strings.Contains(got, want) {
					t.Errorf("the refusal does not name the field where it was written:\n got: %s\nwant: …%s…", got, want)
				}
			})
		}
	}
}

// set sets v at a path of the XR that may go through spec.models[0].
func set(xr map[string]any, path string, v any) {
	rest, ok := strings.CutPrefix(path, "spec.models[0].")
	if !ok {
		stacktest.SetPath(xr, path, v)
		return
	}
	m := xr["spec"].(map[string]any)["models"].([]any)[0].(map[string]any)
	stacktest.SetPath(m, rest, v)
}

// TestGroupChecks: the values of a disaggregation group get the checks the
// model's own get, under the group's path, including the checks across
// fields, which name the block that set the values (issue 29).
func TestGroupChecks(t *testing.T) {
	group := func(kv ...any) map[string]any {
		g := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			stacktest.SetPath(g, kv[i].(string), kv[i+1])
		}
		return pdXR("resources.memory", "2Gi", "disaggregation", map[string]any{"decode": g})
	}
	const p = "invalid ProductionStack: spec.disaggregation.decode"
	for name, tc := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"Memory":         {group("resources.memory", "lots"), p + `.resources.memory "lots" is not a Kubernetes quantity: use a value such as 16Gi or 16000Mi`},
		"CPU":            {group("resources.cpu", "x"), p + `.resources.cpu "x" is not a Kubernetes quantity: use a value such as 4 or 3500m`},
		"CPULimit":       {group("resources.cpuLimit", "8 cores"), p + `.resources.cpuLimit "8 cores" is not a Kubernetes quantity: use a value such as 8 or 7500m`},
		"GPUType":        {group("resources.gpuType", "bad type"), p + `.resources.gpuType "bad type" is not an extended resource name: use a name such as nvidia.com/gpu or amd.com/gpu`},
		"GPUMemoryUnit":  {group("resources.gpuMemory", "24 GB"), p + `.resources.gpuMemory "24 GB" is not a Kubernetes quantity: use a value such as 80Gi`},
		"GPUMemoryZero":  {group("resources.gpuMemory", "0"), p + `.resources.gpuMemory "0" is invalid: a GPU's memory is more than 0; use the memory of one GPU, such as 80Gi, or leave gpuMemory out`},
		"MemoryLimitBig": {group("resources.memoryLimit", "1e999"), p + `.resources.memoryLimit "1e999" is out of range: a Kubernetes quantity is from 1n to below 8Ei; use a value such as 32Gi or 32000Mi`},
		"LimitBelowModelRequest": {group("resources.memoryLimit", "1Gi"),
			p + `: resources.memoryLimit 1Gi is less than spec.resources.memory 2Gi: Kubernetes requires a limit of at least the request; raise the limit or lower the request`},
		"Toleration": {group("tolerations", []any{map[string]any{"key": "k", "operator": "Exists", "value": "v"}}),
			p + `.tolerations[0].value must be empty when operator is Exists: remove value, or use operator: Equal`},
		"Port": {group("extraArgs", []any{"--host=::"}),
			p + `.extraArgs[0] "--host=::" is refused: the stack sets --host itself (the probes and the Service use port 8000 on every address); remove it`},
		"TensorParallelOverModelGPUs": {group("tensorParallelSize", 2),
			p + `: tensorParallelSize 2 needs 2 GPUs but spec.resources.gpu is "1": raise spec.resources.gpu or lower tensorParallelSize`},
		"PipelineOverModelGPUs": {group("tensorParallelSize", 2), ""},
	} {
		t.Run(name, func(t *testing.T) {
			if tc.want == "" {
				stacktest.SetPath(tc.xr, "spec.vllmConfig.pipelineParallelSize", 2)
				stacktest.SetPath(tc.xr, "spec.resources.gpu", "2")
				tc.want = p + `: tensorParallelSize 2 × spec.vllmConfig.pipelineParallelSize 2 needs 4 GPUs but spec.resources.gpu is "2": raise spec.resources.gpu, lower the two, or spread each replica over nodes with multiNode`
			}
			if diff := cmp.Diff(tc.want, fatal(t, run(t, req(t, tc.xr, nil, nil)))); diff != "" {
				t.Errorf("refusal (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGroupWarnings: a group at 0 replicas while the other serves answers
// no request; warnings on a group's values name the group.
func TestGroupWarnings(t *testing.T) {
	for name, tc := range map[string]struct {
		xr   map[string]any
		want []string
	}{
		"DecodeAtZero": {pdXR("disaggregation.decode.replicas", 0), []string{
			"spec.disaggregation.decode.replicas 0 and spec.replicas 1: every request of a disaggregated model goes through both groups, so the model answers none while the prefill group holds its GPUs; set both to 0 to stop the model, or both above 0"}},
		"ModelAtZeroPrefillNot": {pdXR("replicas", 0, "disaggregation.prefill.replicas", 2, "storage.accessModes", []any{"ReadWriteMany"}), []string{
			"spec.replicas 0 and spec.disaggregation.prefill.replicas 2: every request of a disaggregated model goes through both groups, so the model answers none while the prefill group holds its GPUs; set both to 0 to stop the model, or both above 0"}},
		"BothAtZero": {pdXR("replicas", 0), nil},
		"GroupReplicasReadWriteOnce": {pdXR("disaggregation.prefill.replicas", 2), []string{
			"spec.disaggregation.prefill: storage is ReadWriteOnce but replicas is 2: replicas scheduled on other nodes cannot mount the model cache; use accessModes [ReadWriteMany] or one replica"}},
		"GroupWithoutGPU": {pdXR("disaggregation.decode.resources", map[string]any{"gpu": "0"}), []string{
			"spec.disaggregation.decode: resources.gpu is 0 and vllm/vllm-openai is vLLM built for NVIDIA GPUs, which fails at start without one: set resources.gpu, or use a CPU image of vLLM"}},
	} {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, mustRun(t, req(t, tc.xr, nil, nil)).warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
