package validate

import (
	"strings"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// precisePath is the field that turns precise prefix-cache routing on.
const precisePath = "spec.inferenceExtension.picker.prefixCache.mode"

// validatePrecisePrefix refuses precise prefix-cache routing where the
// picker or the engines cannot do it (stack/testdata/upstream/
// PRECISE-PREFIX.md and precise-prefix.tsv), each with the reason and the fix.
func validatePrecisePrefix(f *Findings, s *resolve.Stack) {
	if x := s.Extension; x != nil && x.Spec.Picker != nil && x.Spec.Picker.PrefixCache != nil {
		oneOf(f, precisePath, x.Spec.Picker.PrefixCache.Mode, []string{v1alpha1.PrefixCacheEstimated, v1alpha1.PrefixCachePrecise})
	}
	if !resolve.PrecisePrefix(s) {
		return
	}
	x := s.Extension
	switch r := x.Release; {
	case x.ReleaseErr != nil:
	case r.Kind != upstream.PickerLLMD:
		f.errorf("%s Precise needs llm-d's endpoint picker, and the stack runs %s, which has no KV-events index (the precise-prefix-cache plugins are llm-d's): use %s or remove prefixCache", precisePath, r, upstream.LLMDPickerImage+":v"+upstream.DefaultPicker.Version.String())
	case !upstream.PickerPrecisePrefix(r):
		f.errorf("%s Precise needs llm-d's picker %s or later, and the stack runs %s: its images are built without embedded tokenizers, so its precise scorer tokenizes only through a tokenizer sidecar over a Unix socket, which the function does not run; from %s the picker tokenizes through the engines' own render endpoints: use picker.image %s or later", precisePath, upstream.PickerPrecisePrefixSince, r, upstream.PickerPrecisePrefixSince, upstream.LLMDPickerImage+":v"+upstream.PickerPrecisePrefixSince.String())
	}
	if x.Weights.PrefixCache <= 0 {
		f.errorf("%s Precise feeds the prefix-cache scorer, and spec.inferenceExtension.picker.scorers.prefixCache is 0, which leaves it out: give it a weight above 0 (default 3), or remove prefixCache", precisePath)
	}
	for _, e := range s.Engines {
		validatePreciseEngine(f, e)
	}
}

// validatePreciseEngine checks one engine of a stack with precise routing.
func validatePreciseEngine(f *Findings, e resolve.Engine) {
	switch {
	case e.VLLMErr != nil:
	case e.VLLM.Version.Less(upstream.VLLMRenderSince):
		f.errorf("%s: %s Precise needs vLLM %s or later on every engine, and the engine runs vLLM %s, without the /v1/completions/render and /v1/chat/completions/render the picker tokenizes each request through (vLLM PR #32473): use a newer image, or remove prefixCache", e.Block, precisePath, upstream.VLLMRenderSince, e.VLLM)
	}
	if e.Role != "" {
		f.errorf("%s: %s Precise is not rendered for a disaggregated model: its pool's endpoints are the decode pods' routing sidecars and the prefill pods, whose KV events the function does not wire to the prefill and decode profiles: remove prefixCache or disaggregation", e.Block, precisePath)
	}
	if e.DataParallel > 1 {
		f.errorf("%s: %s Precise cannot see every rank of vllmConfig.dataParallelSize %d: each rank publishes its KV events on port %d plus its rank, and the picker subscribes to one port per endpoint of its pool, which has one endpoint per pod: remove dataParallelSize or prefixCache", e.Block, precisePath, e.DataParallel, upstream.KVEventsPort)
	}
	if !ptr.Deref(e.Cfg.VLLMConfig.EnablePrefixCaching, true) {
		f.errorf("%s.vllmConfig.enablePrefixCaching is false, and %s Precise routes on the blocks the engines cache and announce, which they do only with prefix caching: remove enablePrefixCaching: false, or prefixCache", e.Block, precisePath)
	}
	if strings.Contains(e.Served, "@") {
		f.errorf("%s: the served model name %q has an '@', and %s Precise sends it in the KV events' topic kv@<pod>@<model>, which the picker splits at '@': serve the model under a name without one", e.Block, e.Served, precisePath)
	}
}
