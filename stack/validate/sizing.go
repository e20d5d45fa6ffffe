package validate

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
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
func gpuMemoryGB(e resolve.Engine) (float64, string, bool) {
	if m := e.Cfg.Resources.GPUMemory; m != "" {
		if q, err := resolve.ParseQuantity(m); err == nil && q.Sign() > 0 {
			return q.AsApproximateFloat64() / 1e9, "resources.gpuMemory " + m, true
		}
	}
	sel := e.Cfg.Scheduling.NodeSelector
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
func warnOversized(f *Findings, e resolve.Engine) {
	weights, name, ok := resolve.EngineWeightsGB(e)
	memGB, gpu, known := gpuMemoryGB(e)
	if !ok || !known || e.VLLMErr != nil {
		return
	}
	tp := int(e.TensorParallel)
	util, from := upstream.VLLMDefaultGPUMemoryUtilization(e.VLLM.Version), "vLLM's default"
	if u, err := strconv.ParseFloat(e.Cfg.VLLMConfig.GPUMemoryUtilization, 64); err == nil && u > 0 {
		util, from = u, "vllmConfig.gpuMemoryUtilization"
	}
	// Pipeline stages split the layers as tensor parallel ranks split each
	// layer: every GPU holds 1/(TP×PP) of the weights.
	pp := int(ptr.Deref(e.Cfg.VLLMConfig.PipelineParallelSize, 1))
	// Expert parallelism spreads the experts over the data-parallel ranks
	// too (spreadByExperts): at most weights/(DP×TP×PP) per GPU.
	spread, expertNote := spreadByExperts(e)
	perGPU := weights / float64(tp*pp*spread)
	split, fix := fmt.Sprintf("tensorParallelSize %d", tp), "raise tensorParallelSize"
	if pp > 1 {
		split, fix = fmt.Sprintf("tensorParallelSize %d × pipelineParallelSize %d", tp, pp), "raise tensorParallelSize or pipelineParallelSize (across nodes with multiNode)"
	}
	split += expertNote
	if usable := memGB * util; perGPU > usable {
		f.warnf("%s: %s announces about %.0f GB of weights, %.0f GB per GPU at %s, and a GPU of %s has %.0f GB, of which vLLM uses %.0f GB (%s %.2f): the weights cannot load; %s or pick larger GPUs",
			e.GroupPath(), name, weights, perGPU, split, gpu, memGB, usable, from, util, fix)
		return
	}
	warnKVCache(f, e, weights/float64(spread), memGB, util, tp*pp)
}

// The least memory besides the weights and the KV cache that llm-d's
// capacity planner counts (sizing.tsv "constant" rows): activations, whose
// smallest per-architecture figure is 2.5 GiB, and vLLM's non-torch memory
// per GPU, 0.15 GiB at TP 1 and 0.6 GiB from TP 2. The least, so a warning
// is certain.
const (
	minActivationGiB = 2.5
	nonTorchTP1GiB   = 0.15
	nonTorchTPNGiB   = 0.6
)

// warnTensorParallelHeads warns that vLLM refuses to start when the tensor
// parallel size does not divide the attention heads model.shape declares
// ("Total number of attention heads (H) must be divisible by tensor
// parallel size (T)", sizing.tsv).
func warnTensorParallelHeads(f *Findings, e resolve.Engine) {
	s := e.Model.Shape
	if s == nil || s.NumAttentionHeads == nil {
		return
	}
	h, tp := *s.NumAttentionHeads, e.TensorParallel
	if h%tp == 0 {
		return
	}
	var divisors []string
	for d := int32(1); d <= h && len(divisors) < 8; d++ {
		if h%d == 0 {
			divisors = append(divisors, strconv.Itoa(int(d)))
		}
	}
	f.warnf("%s: tensorParallelSize %d does not divide %s.shape.numAttentionHeads %d, and vLLM refuses to start then (\"Total number of attention heads must be divisible by tensor parallel size\"): use a tensorParallelSize that divides %d, e.g. %s",
		e.GroupPath(), tp, e.Path, h, h, strings.Join(divisors, ", "))
}

// warnKVCache warns when one request of maxModelLen tokens needs more KV
// cache than the GPUs of a replica leave after the weights, by llm-d's
// capacity planner (sizing.tsv "formula" rows): KV bytes per token are
// layers × 2 × head dim × KV heads × bytes (2, or 1 where extraArgs set a
// --kv-cache-dtype, the least); the memory left is GPU memory ×
// utilization × GPUs − weights − activations − non-torch memory per GPU.
// vLLM then refuses to start: its KV cache cannot hold one request.
func warnKVCache(f *Findings, e resolve.Engine, weightsGB, memGB, util float64, gpus int) {
	s, maxLen := e.Model.Shape, e.Model.MaxModelLen
	if s == nil || s.NumHiddenLayers == nil || s.HeadDim == nil || maxLen == nil || (s.NumKeyValueHeads == nil && s.NumAttentionHeads == nil) {
		return
	}
	kvHeads := ptr.Deref(s.NumKeyValueHeads, ptr.Deref(s.NumAttentionHeads, 0))
	kvBytes := 2.0
	if slices.ContainsFunc(e.Cfg.VLLMConfig.ExtraArgs, func(a string) bool { return strings.HasPrefix(a, "--kv-cache-dtype") }) {
		kvBytes = 1
	}
	perToken := float64(*s.NumHiddenLayers) * 2 * float64(*s.HeadDim) * float64(kvHeads) * kvBytes
	need := perToken * float64(*maxLen)
	nonTorch := nonTorchTP1GiB
	if e.TensorParallel > 1 {
		nonTorch = nonTorchTPNGiB
	}
	left := memGB*1e9*util*float64(gpus) - weightsGB*1e9 - minActivationGiB*resolve.Gib - nonTorch*resolve.Gib*float64(gpus)
	if need <= left {
		return
	}
	f.warnf("%s: one request of %s.maxModelLen %d tokens needs about %.1f GB of KV cache (%s.shape: %d layers × 2 × %d KV heads × head dim %d × %.0f bytes per token), and the %d GPUs of a replica leave at most %.1f GB for it after the weights, activations and non-torch memory (llm-d's capacity planner): vLLM refuses to start; lower maxModelLen, raise tensorParallelSize or pipelineParallelSize, or pick larger GPUs",
		e.GroupPath(), e.Path, *maxLen, need/1e9, e.Path, *s.NumHiddenLayers, kvHeads, *s.HeadDim, kvBytes, gpus, max(left, 0)/1e9)
}
