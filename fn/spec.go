package fn

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	sigsjson "sigs.k8s.io/json"

	"github.com/crossplane/function-sdk-go/resource/composite"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
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

// crossplaneSpecFields are the spec fields Crossplane itself adds to an XR.
// They are not part of the ProductionStack API and are ignored when decoding.
var crossplaneSpecFields = []string{
	"crossplane", // v2 namespaced XRs keep Crossplane's machinery here.
	"claimRef",
	"compositionRef",
	"compositionRevisionRef",
	"compositionRevisionSelector",
	"compositionSelector",
	"compositionUpdatePolicy",
	"environmentConfigRefs",
	"publishConnectionDetailsTo",
	"resourceRefs",
	"writeConnectionSecretToRef",
}

// decodeSpec decodes the XR's spec into the typed API. Unknown fields are
// errors that name the field: `crossplane render` does not apply the XRD's
// schema, and a typo silently ignored is a stack that serves the wrong thing.
func decodeSpec(xr *composite.Unstructured) (*v1alpha1.ProductionStackSpec, error) {
	raw, ok := xr.Object["spec"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("spec is missing: a ProductionStack needs spec.model or spec.models")
	}
	own := make(map[string]any, len(raw))
	for k, v := range raw {
		own[k] = v
	}
	for _, k := range crossplaneSpecFields {
		delete(own, k)
	}
	b, err := json.Marshal(own)
	if err != nil {
		return nil, fmt.Errorf("cannot encode spec: %w", err)
	}
	spec := &v1alpha1.ProductionStackSpec{}
	strict, err := sigsjson.UnmarshalStrict(b, spec)
	if err != nil {
		return nil, fmt.Errorf("cannot decode spec: %s", specPathError(err.Error()))
	}
	if len(strict) > 0 {
		msgs := make([]string, 0, len(strict))
		for _, e := range strict {
			msgs = append(msgs, specPathError(e.Error()))
		}
		sort.Strings(msgs)
		return nil, fmt.Errorf("spec has fields the ProductionStack API does not know: %s; check the spelling against `kubectl explain productionstack.spec`", strings.Join(msgs, "; "))
	}
	return spec, nil
}

// specPathError makes the decoder's field paths absolute ("spec.model.foo"
// rather than "model.foo") so the user finds the field in the manifest.
func specPathError(msg string) string {
	msg = strings.TrimPrefix(msg, "json: ")
	for _, p := range []string{`unknown field "`, `duplicate field "`} {
		msg = strings.ReplaceAll(msg, p, p+"spec.")
	}
	// "Go struct field VLLMConfig.vllmConfig.hfTokenSecret": the innermost
	// Go type, then the path from the spec.
	msg = goStructField.ReplaceAllString(msg, "spec.")
	// Inline structs show in the decoder's paths ("spec.EngineConfig.replicas");
	// the user's manifest has no such level.
	return embeddedField.ReplaceAllString(msg, "")
}

var (
	goStructField = regexp.MustCompile(`Go struct field [A-Za-z0-9]+\.`)
	embeddedField = regexp.MustCompile(`(EngineConfig|Model)\.`)
)

// stackIdentity is where the stack's objects live and what they are named
// after.
type stackIdentity struct {
	name      string // the user's name of the stack: the XR's, or the claim's
	namespace string
	legacy    bool // a v1 (LegacyCluster) XR, possibly from a claim
}

// identify finds the stack's name and namespace. A namespaced (v2) XR owns
// its namespace; Crossplane forces composed objects into it. A legacy XR is
// cluster scoped: its objects go into the namespace of the claim that created
// it, named after the claim.
func identify(xr *composite.Unstructured) (stackIdentity, error) {
	if ns := xr.GetNamespace(); ns != "" {
		return stackIdentity{name: xr.GetName(), namespace: ns}, nil
	}
	if xr.GetKind() == namespacedKind {
		// Only `crossplane render` of a manifest without a namespace gets
		// here: the API server always sets a namespaced XR's namespace.
		// Render it where `kubectl apply` would put it by default.
		return stackIdentity{name: xr.GetName(), namespace: defaultNamespace}, nil
	}
	labels := xr.GetLabels()
	ns, name := labels[labelClaimNamespace], labels[labelClaimName]
	if ns == "" || name == "" {
		return stackIdentity{}, fmt.Errorf("%s %q is cluster scoped and was not created by a claim, so its engines have no namespace: "+
			"create a ProductionStack claim in the namespace that should run the stack (or install the namespaced XRD in xrd/definition.yaml)",
			xr.GetKind(), xr.GetName())
	}
	return stackIdentity{name: name, namespace: ns, legacy: true}, nil
}
