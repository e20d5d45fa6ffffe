package validate

import (
	"fmt"
	"strings"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// ValidateInput checks the fields of the function's Input that go into
// composed objects. Crossplane does not check an Input against its CRD, and
// the Composition's author sees the refusal on every stack it composes.
func ValidateInput(in *v1beta1.Input) error {
	var f Findings
	const p = "the function's Input "
	if s := in.GetStorage(); s.Size != "" {
		if q, err := resolve.ParseQuantity(s.Size); err != nil || q.Sign() <= 0 || !resolve.QuantityInRange(q) {
			f.errorf("%sstorage.size %s is invalid: use a Kubernetes quantity greater than 0, such as 50Gi", p, resolve.ClipQuote(s.Size))
		}
	}
	objectName(&f, p+"storage.storageClassName", in.GetStorage().StorageClassName)
	image(&f, p+"engine.image", in.GetEngine().Image)
	imageRegistry(&f, p+"engine.imagePullRegistry", in.GetEngine().ImagePullRegistry)
	image(&f, p+"router.image", in.GetRouter().Image)
	imageTag(&f, p+"router.tag", in.GetRouter().Tag)
	image(&f, p+"adapterSync.image", in.GetAdapterSync().Image)
	if len(f.Errors) == 0 {
		return nil
	}
	return fmt.Errorf("invalid Input in the Composition: %s", strings.Join(f.Errors, "; "))
}
