package fn

import (
	"fmt"
	"slices"
	"strings"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
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
var optionalKinds = map[string]struct{ crd, installedBy, field string }{
	"ScaledObject":   {"scaledobjects.keda.sh", "KEDA", "autoscaling.type keda"},
	"HTTPRoute":      {"httproutes.gateway.networking.k8s.io", "the Gateway API", "routerConfig.httpRoute"},
	"ServiceMonitor": {"servicemonitors.monitoring.coreos.com", "the Prometheus Operator", "monitoring.serviceMonitor"},
}

// crdRequirementPrefix prefixes the names of the CRD requirements.
const crdRequirementPrefix = "crd-"

// optionalKindsOf are the optional kinds among the stack's objects, each
// once, in the order of the objects.
func optionalKindsOf(objs []object) []string {
	var kinds []string
	for _, o := range objs {
		k := o.obj.GetObjectKind().GroupVersionKind().Kind
		if _, ok := optionalKinds[k]; ok && !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	return kinds
}

// requireCRDs asks Crossplane for the CRD of each optional kind.
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

// missingCRDs explains each optional kind whose CRD Crossplane looked for
// and did not find. Before Crossplane has looked (the first call of a
// reconcile, or `crossplane render`), nothing is missing.
func missingCRDs(req *fnv1.RunFunctionRequest, kinds []string) error {
	var missing []string
	for _, k := range kinds {
		o := optionalKinds[k]
		found, looked := req.GetRequiredResources()[crdRequirementPrefix+o.crd]
		if looked && !hasCRD(found.GetItems(), o.crd) {
			missing = append(missing, fmt.Sprintf("%s needs the %s CRD %s, which the cluster does not have: install %s, or turn %s off", o.field, k, o.crd, o.installedBy, o.field))
		}
	}
	if len(missing) == 0 {
		return nil
	}
	return fmt.Errorf("cannot compose the stack: %s", strings.Join(missing, "; "))
}

// hasCRD reports whether items hold the CRD named crd: Crossplane sends what
// the requirement matched, and a broken cluster may send anything.
func hasCRD(items []*fnv1.Resource, crd string) bool {
	for _, it := range items {
		f := it.GetResource().GetFields()
		if f["kind"].GetStringValue() == "CustomResourceDefinition" && strings.HasPrefix(f["apiVersion"].GetStringValue(), "apiextensions.k8s.io/") &&
			f["metadata"].GetStructValue().GetFields()["name"].GetStringValue() == crd {
			return true
		}
	}
	return false
}
