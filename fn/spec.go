package fn

import (
	"fmt"

	"github.com/crossplane/function-sdk-go/resource/composite"

	"github.com/vllm-project/function-vllm-stack/stack"
)

// Labels Crossplane puts on a legacy (v1, cluster scoped) XR that a claim
// created. The function puts every namespaced object into the claim's
// namespace and names objects after the claim, like the Helm chart names them
// after its release.
const (
	labelClaimName      = "crossplane.io/claim-name"
	labelClaimNamespace = "crossplane.io/claim-namespace"

	// namespacedKind is the XR kind of the namespaced XRD; the legacy XRD's
	// XR kind is XProductionStack (its claim kind is ProductionStack).
	namespacedKind   = "ProductionStack"
	defaultNamespace = "default"
)

// identify finds the stack's name and namespace. A namespaced (v2) XR owns
// its namespace; Crossplane forces composed objects into it. A legacy XR is
// cluster scoped: its objects go into the namespace of the claim that created
// it, named after the claim.
func identify(xr *composite.Unstructured) (stack.Identity, error) {
	if ns := xr.GetNamespace(); ns != "" {
		return stack.Identity{Name: xr.GetName(), Namespace: ns}, nil
	}
	if xr.GetKind() == namespacedKind {
		// Only `crossplane render` of a manifest without a namespace gets
		// here: the API server always sets a namespaced XR's namespace.
		// Render it where `kubectl apply` would put it by default.
		return stack.Identity{Name: xr.GetName(), Namespace: defaultNamespace}, nil
	}
	labels := xr.GetLabels()
	ns, name := labels[labelClaimNamespace], labels[labelClaimName]
	if ns == "" || name == "" {
		return stack.Identity{}, fmt.Errorf("%s %q is cluster scoped and was not created by a claim, so its engines have no namespace: "+
			"create a ProductionStack claim in the namespace that should run the stack (or install the namespaced XRD in xrd/definition.yaml)",
			xr.GetKind(), xr.GetName())
	}
	return stack.Identity{Name: name, Namespace: ns, Legacy: true}, nil
}
