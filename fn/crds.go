package fn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/runtime/schema"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composite"

	"github.com/vllm-project/function-vllm-stack/stack"
)

// optionalKinds are the composed kinds Kubernetes does not build in, by
// kind: the CRD that defines each, what installs it, and the field that
// makes the stack compose it.
//
// A stack that composes a kind the cluster does not have wedges: Crossplane
// cannot apply it, and from then on cannot even read the stack's composed
// resources, so turning the option off does not help. The function asks
// Crossplane for each CRD it needs (a required resource) and refuses the
// stack while one is missing, before anything is composed.
var optionalKinds = map[string]optionalKind{
	"ScaledObject":    {"scaledobjects.keda.sh", "KEDA", "autoscaling.type keda", false},
	"HTTPRoute":       {"httproutes.gateway.networking.k8s.io", "the Gateway API", "routerConfig.httpRoute", false},
	"ServiceMonitor":  {"servicemonitors.monitoring.coreos.com", "the Prometheus Operator", "monitoring.serviceMonitor", false},
	"PrometheusRule":  {"prometheusrules.monitoring.coreos.com", "the Prometheus Operator", "monitoring.alerts", false},
	"LeaderWorkerSet": {"leaderworkersets.leaderworkerset.x-k8s.io", "LeaderWorkerSet (kubernetes-sigs/lws)", "multiNode", false},
	"InferencePool":   {"inferencepools.inference.networking.k8s.io", "the Gateway API Inference Extension's CRDs", "inferenceExtension", false},
	// InferenceObjectives are in the group the picker's release watches,
	// one CRD each: keyed by kind and group (kindKey).
	"InferenceObjective.inference.networking.x-k8s.io": {crd: "inferenceobjectives.inference.networking.x-k8s.io", installedBy: "the Gateway API Inference Extension's CRDs of v1.5.0 or earlier (v1.6.0 dropped InferenceObjective)", field: "inferenceObjectives", list: true},
	"InferenceObjective.llm-d.ai":                      {crd: "inferenceobjectives.llm-d.ai", installedBy: "llm-d's CRDs (llm-d-router's config/crd)", field: "inferenceObjectives", list: true},
}

// An optionalKind is the CRD of a kind, what installs it, and the field
// that makes the stack compose it: an option turned off, or a list (list)
// emptied.
type optionalKind struct {
	crd, installedBy, field string
	list                    bool
}

// offState is the field's state once it composes no object of the kind.
func (o optionalKind) offState() string {
	if o.list {
		return "removed"
	}
	return "off"
}

// off is how the messages tell to stop composing the kind.
func (o optionalKind) off() string {
	if o.list {
		return "remove " + o.field
	}
	return "turn " + o.field + " off"
}

// kindKey is the key of an object's kind in optionalKinds: its kind, or
// kind.group for a kind the function composes in more than one group; ""
// for a kind Kubernetes builds in.
func kindKey(gvk schema.GroupVersionKind) string {
	if _, ok := optionalKinds[gvk.Kind+"."+gvk.Group]; ok {
		return gvk.Kind + "." + gvk.Group
	}
	if _, ok := optionalKinds[gvk.Kind]; ok {
		return gvk.Kind
	}
	return ""
}

// kindOf is the kind of a key of optionalKinds.
func kindOf(key string) string {
	k, _, _ := strings.Cut(key, ".")
	return k
}

// fieldOf is the field that makes a stack compose an optional kind: a stack
// on the inference extension composes its HTTPRoute for it (it refuses
// routerConfig.httpRoute); ScaledObjects come from autoscaling.type keda or
// scaleToZero.
func fieldOf(kind string, s *stack.Stack) string {
	switch {
	case kind == "HTTPRoute" && s.InferenceExtension():
		return "inferenceExtension"
	case kind == "ScaledObject":
		return s.ScaledObjectFields()
	}
	return optionalKinds[kind].field
}

// crdRequirementPrefix prefixes the names of the CRD requirements.
const crdRequirementPrefix = "crd-"

// optionalKindsOf are the optional kinds among the stack's objects, each
// once, in the order of the objects.
func optionalKindsOf(objs []stack.Object) []string {
	var kinds []string
	for _, o := range objs {
		if k := kindKey(o.Obj.GetObjectKind().GroupVersionKind()); k != "" && !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// unprovenKinds are the optional kinds whose CRD the function asks for: on
// a cluster, those of which an object is not observed yet. An object
// Crossplane observed shows that the cluster serves its kind: with its CRD
// gone the API server deletes every object of the kind, and Crossplane
// cannot even read them, so the CRD is asked for again as soon as one is
// not observed. A preview asks for every CRD, as it always did: `crossplane
// render` answers from the files it was given.
func unprovenKinds(objs []stack.Object, observed map[resource.Name]resource.ObservedComposed, preview bool) []string {
	var kinds []string
	for _, o := range objs {
		gvk := o.Obj.GetObjectKind().GroupVersionKind()
		k := kindKey(gvk)
		if k == "" || slices.Contains(kinds, k) {
			continue
		}
		if seen := observed[resource.Name(o.Key)].Resource; preview || seen == nil || seen.GroupVersionKind().GroupKind() != gvk.GroupKind() {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// requireCRDs asks Crossplane for the CRD of each of kinds.
func requireCRDs(rsp *fnv1.RunFunctionResponse, kinds []string) {
	for _, k := range kinds {
		crd := optionalKinds[k].crd
		require(rsp, crdRequirementPrefix+crd, &fnv1.ResourceSelector{
			ApiVersion: "apiextensions.k8s.io/v1",
			Kind:       "CustomResourceDefinition",
			Match:      &fnv1.ResourceSelector_MatchName{MatchName: crd},
		})
	}
}

// checkCRDs checks that the cluster has the CRD of each optional kind. On a
// cluster it refuses the stack once Crossplane looked for a CRD and did not
// find it; before Crossplane has looked (the first call of a reconcile),
// nothing is missing. A preview has no cluster (see preview): a CRD it was
// not given is assumed, with a warning.
func checkCRDs(req *fnv1.RunFunctionRequest, kinds []string, preview bool, s *stack.Stack) (warnings []string, err error) {
	var missing []string
	for _, k := range kinds {
		o := optionalKinds[k]
		o.field = fieldOf(k, s)
		found, looked := req.GetRequiredResources()[crdRequirementPrefix+o.crd]
		switch {
		case hasCRD(found.GetItems(), o.crd):
		case preview:
			warnings = append(warnings, fmt.Sprintf("preview: %s composes %s %s, shown as if the cluster had its CRD %s; on a cluster without it the stack is refused until %s is installed or %s is %s", o.field, article(kindOf(k)), kindOf(k), o.crd, o.installedBy, o.field, o.offState()))
		case looked:
			missing = append(missing, fmt.Sprintf("%s needs the %s CRD %s, which the cluster does not have: install %s, or %s", o.field, kindOf(k), o.crd, o.installedBy, o.off()))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("cannot compose the stack: %s", strings.Join(missing, "; "))
	}
	return warnings, nil
}

// hasCRD reports whether items hold the CRD named crd, of any version of
// its API group.
func hasCRD(items []*fnv1.Resource, crd string) bool {
	return hasObject(items, "CustomResourceDefinition", crd, func(apiVersion string) bool {
		return strings.HasPrefix(apiVersion, "apiextensions.k8s.io/")
	})
}

// hasObject reports whether items hold an object of kind and name whose
// apiVersion is one apiVersionOK takes: Crossplane sends what a requirement
// matched, and a broken cluster may send anything.
func hasObject(items []*fnv1.Resource, kind, name string, apiVersionOK func(string) bool) bool {
	for _, it := range items {
		f := it.GetResource().GetFields()
		if f["kind"].GetStringValue() == kind && apiVersionOK(f["apiVersion"].GetStringValue()) &&
			f["metadata"].GetStructValue().GetFields()["name"].GetStringValue() == name {
			return true
		}
	}
	return false
}

// preview reports whether the stack comes from `crossplane render` rather
// than from a cluster. An API server gives every object a UID; `crossplane
// render` sends the XR of its file as written, without one (CLI 2.2), or with
// a UID it makes up from the XR's kind, namespace and name (the renderer of
// Crossplane core 2.3 and later). A preview has no cluster to ask for CRDs:
// render answers every requirement with nothing, which is not a cluster
// without the CRD.
func preview(xr *composite.Unstructured) bool {
	uid := string(xr.GetUID())
	return uid == "" || uid == renderUID(xr.GroupVersionKind().String(), xr.GetNamespace(), xr.GetName())
}

// renderUID is the UID `crossplane render` of Crossplane core 2.3 and later
// gives an XR that has none: a name-based (SHA-1) UUID of the XR's kind,
// namespace and name (internal/render/composite/render.go).
func renderUID(gvk, namespace, name string) string {
	return uuid.NewSHA1(uuid.Nil, []byte(gvk+"\x00"+namespace+"\x00"+name)).String()
}

// article is the article of a kind's name as the messages spell it.
func article(kind string) string {
	if strings.ContainsRune("AEIOU", rune(kind[0])) {
		return "an"
	}
	return "a"
}
