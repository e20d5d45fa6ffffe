package stack

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOversizedWarning: weights that cannot fit the GPUs the node selector
// picks are warned about, with the numbers; what fits, or what the
// function cannot size, is not.
func TestOversizedWarning(t *testing.T) {
	const llama70 = "meta-llama/Llama-3.1-70B-Instruct" // 70B at 2 bytes: 140 GB
	on := func(label, value string, kv ...any) map[string]any {
		return with(append([]any{"model.modelURL", llama70, "vllmConfig.image", "vllm/vllm-openai:v0.22.0",
			"scheduling.nodeSelector", map[string]any{label: value}}, kv...)...)
	}
	cases := map[string]struct {
		xr   map[string]any
		want []string
	}{
		"L4": {xr: on("nvidia.com/gpu.product", "NVIDIA-L4"), want: []string{
			"spec: meta-llama/Llama-3.1-70B-Instruct announces about 140 GB of weights, 140 GB per GPU at tensorParallelSize 1, and a GPU of NVIDIA-L4 has 24 GB, of which vLLM uses 22 GB (vLLM's default 0.92): the weights cannot load; raise tensorParallelSize or pick larger GPUs"}},
		"TimeSlicedL4": {xr: on("nvidia.com/gpu.product", "NVIDIA-L4-SHARED"), want: []string{
			"spec: meta-llama/Llama-3.1-70B-Instruct announces about 140 GB of weights, 140 GB per GPU at tensorParallelSize 1, and a GPU of NVIDIA-L4-SHARED has 24 GB, of which vLLM uses 22 GB (vLLM's default 0.92): the weights cannot load; raise tensorParallelSize or pick larger GPUs"}},
		"MemoryLabelAndUtilization": {xr: on("nvidia.com/gpu.memory", "81559", "vllmConfig.gpuMemoryUtilization", "0.8", "vllmConfig.image", "vllm/vllm-openai:v0.12.0"), want: []string{
			"spec: meta-llama/Llama-3.1-70B-Instruct announces about 140 GB of weights, 140 GB per GPU at tensorParallelSize 1, and a GPU of nvidia.com/gpu.memory 81559 has 86 GB, of which vLLM uses 68 GB (vllmConfig.gpuMemoryUtilization 0.80): the weights cannot load; raise tensorParallelSize or pick larger GPUs"}},
		"SplitOverEightL4": {xr: on("nvidia.com/gpu.product", "NVIDIA-L4", "vllmConfig.tensorParallelSize", 8, "resources.gpu", "8")},
		"H100":             {xr: on("nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3", "vllmConfig.tensorParallelSize", 2, "resources.gpu", "2")},
		"QuantizedOnL40S":  {xr: on("nvidia.com/gpu.product", "NVIDIA-L40S", "model.modelURL", "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4")},
		"UnknownProduct":   {xr: on("nvidia.com/gpu.product", "NVIDIA-GH200-480GB")},
		"MIGSlice":         {xr: on("nvidia.com/gpu.product", "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb")},
		"NoSizeInName":     {xr: on("nvidia.com/gpu.product", "NVIDIA-L4", "model.modelURL", "org/m")},
		// Pipeline stages split the weights too: 140 GB over 2 × 2 L4s is
		// 35 GB each, still too much; over 2 × 4 multi-node pods of 2 it fits.
		"PipelineOnL4": {xr: on("nvidia.com/gpu.product", "NVIDIA-L4", "vllmConfig.tensorParallelSize", 2, "vllmConfig.pipelineParallelSize", 2, "resources.gpu", "4"), want: []string{
			"spec: meta-llama/Llama-3.1-70B-Instruct announces about 140 GB of weights, 35 GB per GPU at tensorParallelSize 2 × pipelineParallelSize 2, and a GPU of NVIDIA-L4 has 24 GB, of which vLLM uses 22 GB (vLLM's default 0.92): the weights cannot load; raise tensorParallelSize or pipelineParallelSize (across nodes with multiNode) or pick larger GPUs"}},
		// The size and the GPU's memory from their own fields, over the
		// name (which says nothing here) and the node selector.
		"ParameterCountAndGPUMemory": {xr: with("model.modelURL", "org/m", "model.parameterCount", "8x7B", "resources.gpuMemory", "24Gi", "vllmConfig.image", "vllm/vllm-openai:v0.22.0"), want: []string{
			"spec: model.parameterCount 8x7B announces about 112 GB of weights, 112 GB per GPU at tensorParallelSize 1, and a GPU of resources.gpuMemory 24Gi has 26 GB, of which vLLM uses 24 GB (vLLM's default 0.92): the weights cannot load; raise tensorParallelSize or pick larger GPUs"}},
		"GPUMemoryOverSelector": {xr: on("nvidia.com/gpu.product", "NVIDIA-L4", "resources.gpuMemory", "141Gi", "vllmConfig.tensorParallelSize", 2, "resources.gpu", "2")},
		"MultiNodeOnL4": {xr: on("nvidia.com/gpu.product", "NVIDIA-L4", "vllmConfig.tensorParallelSize", 2, "vllmConfig.pipelineParallelSize", 4, "resources.gpu", "2",
			"multiNode", map[string]any{"podsPerReplica": 4}, "storage.accessModes", []any{"ReadWriteMany"})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, w := range mustRun(t, req(t, tc.xr, nil, nil)).warnings {
				if strings.Contains(w, "announces about") {
					got = append(got, w)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// llama70Shape is Llama 3.1 70B's config.json: 80 layers, 64 attention
// heads, 8 key/value heads of dimension 128.
var llama70Shape = map[string]any{"numHiddenLayers": 80, "numAttentionHeads": 64, "numKeyValueHeads": 8, "headDim": 128}

// TestKVCacheWarning: with model.shape and maxModelLen, one request's KV
// cache against what the replica's GPUs leave after the weights, on both
// sides of the boundary: 128K tokens of Llama 3.1 70B need 42.9 GB, which two
// H100s do not leave (13.4 GB) and four do.
func TestKVCacheWarning(t *testing.T) {
	on := func(tp int, kv ...any) map[string]any {
		return with(append([]any{"model.modelURL", "meta-llama/Llama-3.1-70B-Instruct", "model.shape", llama70Shape, "model.maxModelLen", 131072,
			"vllmConfig.image", "vllm/vllm-openai:v0.22.0", "vllmConfig.tensorParallelSize", tp, "resources.gpu", strconv.Itoa(tp),
			"scheduling.nodeSelector", map[string]any{"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}, kv...)...)
	}
	const twoH100 = "spec: one request of spec.model.maxModelLen 131072 tokens needs about 42.9 GB of KV cache (spec.model.shape: 80 layers × 2 × 8 KV heads × head dim 128 × 2 bytes per token), and the 2 GPUs of a replica leave at most 13.4 GB for it after the weights, activations and non-torch memory (llm-d's capacity planner): vLLM refuses to start; lower maxModelLen, raise tensorParallelSize or pipelineParallelSize, or pick larger GPUs"
	for name, tc := range map[string]struct {
		xr   map[string]any
		want []string
	}{
		"TwoH100":        {xr: on(2), want: []string{twoH100}},
		"FourH100":       {xr: on(4)},
		"ShorterContext": {xr: on(2, "model.maxModelLen", 32768)},
		"NoShape":        {xr: on(2, "model.shape", nil)},
		"NoMaxModelLen":  {xr: on(2, "model.maxModelLen", nil)},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, w := range mustRun(t, req(t, tc.xr, nil, nil)).warnings {
				if strings.Contains(w, "KV cache") {
					got = append(got, w)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTensorParallelHeads: vLLM refuses a tensor parallel size that does
// not divide the attention heads; the warning names the divisors.
func TestTensorParallelHeads(t *testing.T) {
	xr := func(tp int, heads any) map[string]any {
		return with("vllmConfig.tensorParallelSize", tp, "resources.gpu", strconv.Itoa(tp), "model.shape", map[string]any{"numAttentionHeads": heads})
	}
	for name, tc := range map[string]struct {
		xr   map[string]any
		want []string
	}{
		"Divides":    {xr: xr(8, 64)},
		"NotDivides": {xr: xr(16, 40), want: []string{`spec: tensorParallelSize 16 does not divide spec.model.shape.numAttentionHeads 40, and vLLM refuses to start then ("Total number of attention heads must be divisible by tensor parallel size"): use a tensorParallelSize that divides 40, e.g. 1, 2, 4, 5, 8, 10, 20, 40`}},
		"NoShape":    {xr: with("vllmConfig.tensorParallelSize", 3, "resources.gpu", "3")},
	} {
		t.Run(name, func(t *testing.T) {
			var got []string
			for _, w := range mustRun(t, req(t, tc.xr, nil, nil)).warnings {
				if strings.Contains(w, "attention heads") {
					got = append(got, w)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
