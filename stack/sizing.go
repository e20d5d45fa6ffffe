package stack

import (
	"fmt"
	"strconv"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// Node labels GPU Feature Discovery writes: the product and the memory of
// one GPU in MiB.
const (
	labelGPUProduct = "nvidia.com/gpu.product"
	labelGPUMemory  = "nvidia.com/gpu.memory"
)

// gpuMemoryGB is the memory of one GPU of the nodes an engine's node
// selector picks, in GB: their nvidia.com/gpu.memory, else the memory of
// their nvidia.com/gpu.product; false when the selector names neither or a
// product whose memory is not known.
func gpuMemoryGB(e engine) (float64, string, bool) {
	if m := e.cfg.Resources.GPUMemory; m != "" {
		if q, err := parseQuantity(m); err == nil && q.Sign() > 0 {
			return q.AsApproximateFloat64() / 1e9, "resources.gpuMemory " + m, true
		}
	}
	sel := e.cfg.Scheduling.NodeSelector
	if s := sel[labelGPUMemory]; s != "" {
		if mib, err := strconv.Atoi(s); err == nil && mib > 0 {
			return float64(mib) * (1 << 20) / 1e9, labelGPUMemory + " " + s, true
		}
	}
	if p := sel[labelGPUProduct]; p != "" {
		if mib, ok := upstream.GPUProductMemory(p); ok {
			return float64(mib) * (1 << 20) / 1e9, p, true
		}
	}
	return 0, "", false
}

// warnOversized warns when the weights a model's name (or
// model.parameterCount) announces cannot fit the GPUs its node selector (or
// resources.gpuMemory) picks: vLLM then fails while loading them,
// after the download. Only the weights are counted (the KV cache and
// activations need more), so a warning is certain, and silence is not a
// promise.
func warnOversized(f *Findings, e engine) {
	weights, name, ok := engineWeightsGB(e)
	memGB, gpu, known := gpuMemoryGB(e)
	if !ok || !known || e.vllmErr != nil {
		return
	}
	tp := 1
	if t := e.cfg.VLLMConfig.TensorParallelSize; t != nil {
		tp = int(*t)
	}
	util, from := upstream.VLLMDefaultGPUMemoryUtilization(e.vllm.version), "vLLM's default"
	if u, err := strconv.ParseFloat(e.cfg.VLLMConfig.GPUMemoryUtilization, 64); err == nil && u > 0 {
		util, from = u, "vllmConfig.gpuMemoryUtilization"
	}
	// Pipeline stages split the layers as tensor parallel ranks split each
	// layer: every GPU holds 1/(TP×PP) of the weights.
	pp := int(ptr.Deref(e.cfg.VLLMConfig.PipelineParallelSize, 1))
	perGPU := weights / float64(tp*pp)
	split, fix := fmt.Sprintf("tensorParallelSize %d", tp), "raise tensorParallelSize"
	if pp > 1 {
		split, fix = fmt.Sprintf("tensorParallelSize %d × pipelineParallelSize %d", tp, pp), "raise tensorParallelSize or pipelineParallelSize (across nodes with multiNode)"
	}
	if usable := memGB * util; perGPU > usable {
		f.warnf("%s: %s announces about %.0f GB of weights, %.0f GB per GPU at %s, and a GPU of %s has %.0f GB, of which vLLM uses %.0f GB (%s %.2f): the weights cannot load; %s or pick larger GPUs",
			e.groupPath(), name, weights, perGPU, split, gpu, memGB, usable, from, util, fix)
	}
}
