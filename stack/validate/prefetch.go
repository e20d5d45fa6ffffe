package validate

import (
	"path"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// validatePrefetch refuses storage.prefetch where a Job cannot fill the
// model cache once for every engine pod, or where the engines, reading the
// cache offline, would need to download something else.
func validatePrefetch(f *Findings, e resolve.Engine) {
	p := e.Cfg.Storage.Prefetch
	if p == nil || p.Enabled != nil && !*p.Enabled || e.Role == resolve.RoleDecode {
		return // a disaggregated model is checked once, with its prefill group
	}
	field := e.Origin("storage.prefetch")
	st := e.Cfg.Storage
	switch {
	case !resolve.Enabled(st.Enabled):
		f.errorf("%s needs the model cache, and storage is disabled: enable storage or remove prefetch", field)
	case st.EmptyDir != nil:
		f.errorf("%s cannot fill storage.emptyDir: an emptyDir belongs to one pod, so each engine pod downloads its own copy; use a claim or remove prefetch", field)
	case st.ExistingClaimName != "":
		f.errorf("%s cannot fill storage.existingClaimName %q: an existing claim is used as it is; fill it yourself, or remove existingClaimName so the stack makes the claim it fills", field, st.ExistingClaimName)
	case e.Model.Path != "":
		f.errorf("%s has nothing to download: %s.path %q is read from the pod's volumes; remove prefetch", field, e.Path, e.Model.Path)
	case resolve.WeightsFrom(e) == resolve.WeightsLocal:
		f.errorf("%s has nothing to download: %s.modelURL %q is a path, read from the pod's volumes; remove prefetch", field, e.Path, e.Model.ModelURL)
	case resolve.WeightsFrom(e) == resolve.WeightsURL:
		// The fill program downloads from the Hugging Face Hub only; vLLM's
		// object-storage loaders stream such a model at every start.
		f.errorf("%s downloads from the Hugging Face Hub only, and %s.modelURL %q is loaded by vLLM itself from where it points, at every start; remove prefetch", field, e.Path, e.Model.ModelURL)
	}
	for i, a := range e.Model.LoRAAdapters {
		if !path.IsAbs(a.Path) {
			f.errorf("%s: the engines read the cache offline (HF_HUB_OFFLINE=1), so %s.loraAdapters[%d].path %q, a Hugging Face repository, cannot be downloaded by them: use an absolute path or remove prefetch", field, e.Path, i, a.Path)
		}
	}
}
