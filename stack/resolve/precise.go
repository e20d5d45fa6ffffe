package resolve

import "github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"

// The engines' KV-cache block size with precise prefix-cache routing: the
// picker chunks each request's tokens into blocks of this many and must use
// the engines' own size, or no key matches. vLLM chooses its block size by
// attention backend when --block-size is unset, so it is rendered on both
// sides: 16, the picker's default (LLMD-R@v0.10.0:pkg/kvcache/kvblock/
// token_processor.go:32) and vLLM's CUDA default, which every release takes
// (BlockSize Literal[1, 8, 16, …] at 22b64948f vllm/config/cache.py:22, an
// int > 0 from 0.22.0, :48@4ff865c38).
const PrecisePrefixBlockSize = 16

// PrecisePrefixHashSeed is PYTHONHASHSEED of the engines and hashSeed of
// the picker: vLLM chains block hashes from NONE_HASH, seeded by
// PYTHONHASHSEED (random when unset; V@017e9f4448:vllm/v1/core/
// kv_cache_utils.py:103), the picker from hashSeed (token_processor.go:43-47).
// "0", the value the KV offload tiers already set.
const PrecisePrefixHashSeed = "0"

// PrecisePrefix reports whether a stack's pickers route on the engines' KV
// events (inferenceExtension.picker.prefixCache.mode Precise): validation
// refuses it where it cannot work.
func PrecisePrefix(s *Stack) bool {
	x := s.Extension
	if x == nil || x.Spec.Picker == nil || x.Spec.Picker.PrefixCache == nil {
		return false
	}
	return x.Spec.Picker.PrefixCache.Mode == v1alpha1.PrefixCachePrecise
}
