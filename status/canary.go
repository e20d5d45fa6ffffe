package status

import (
	"github.com/vllm-project/function-vllm-stack/stack"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// versionStatus is what status.models[].version says of one version of a
// model with a canary (model.canary): Stable or Canary, its share of the
// model's requests and the promotion's state; nil for a model without one.
func versionStatus(v *stack.VersionPart) *v1alpha1.VersionStatus {
	if v == nil {
		return nil
	}
	return &v1alpha1.VersionStatus{Name: v.Name, Share: v.Share, State: v.State}
}
