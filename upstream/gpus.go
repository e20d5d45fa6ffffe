package upstream

import "strings"

// GPUMemoryMiB is the memory of one GPU, in MiB as NVML reports it (and GPU
// Feature Discovery writes to the node label nvidia.com/gpu.memory), by the
// value GPU Feature Discovery writes to nvidia.com/gpu.product. Only
// products whose label and memory were seen together are listed
// (../stack/testdata/upstream/sizing.tsv, with sources).
var GPUMemoryMiB = map[string]int{
	"NVIDIA-H100-80GB-HBM3": 81559,
	"NVIDIA-H100-PCIe":      81559,
	"NVIDIA-H200":           143771,
	"NVIDIA-B200":           183359,
	"NVIDIA-A100-SXM4-80GB": 81920,
	"NVIDIA-A100-SXM4-40GB": 40960,
	"NVIDIA-L40S":           46068,
	"NVIDIA-L4":             23034,
	"NVIDIA-A10G":           23028,
	"Tesla-T4":              15360,
	"Tesla-V100-SXM2-32GB":  32768,
}

// GPUProductMemory is the memory of one GPU of a product label value, in
// MiB; false for a product the table lacks and for a MIG slice. With time
// slicing, GPU Feature Discovery appends -SHARED to the product.
func GPUProductMemory(product string) (int, bool) {
	if strings.Contains(product, "-MIG-") {
		return 0, false
	}
	mib, ok := GPUMemoryMiB[strings.TrimSuffix(product, "-SHARED")]
	return mib, ok
}

// VLLMDefaultGPUMemoryUtilization is the fraction of GPU memory vLLM v takes
// without --gpu-memory-utilization: 0.90, and 0.92 from main of 2026-04-21
// (96a85c5750, #38284: 0.20.0 is the boundary, certain at 0.22.0; the
// larger value is taken from 0.20.0, so a check against it never warns
// wrongly).
func VLLMDefaultGPUMemoryUtilization(v Version) float64 {
	if v.AtLeast(V(0, 20, 0)) {
		return 0.92
	}
	return 0.90
}
