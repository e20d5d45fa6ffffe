package kubediff

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/autoscaling/horizontalpodautoscaler"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/core/serviceaccount"
	"k8s.io/kubernetes/pkg/registry/networking/ingress"
	"k8s.io/kubernetes/pkg/registry/networking/networkpolicy"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/registry/rbac/role"
	"k8s.io/kubernetes/pkg/registry/rbac/rolebinding"
)

// validateBuiltin reports what the API server refuses in obj, an object of
// a kind Kubernetes builds in, as it handles a create: decoded, defaulted and
// converted to the internal type as a request body is, then the kind's
// registry strategy (pkg/registry/<group>/<resource>/strategy.go, v1.37.2)
// prepares it, and rest.ValidateCreate (k8s.io/apiserver
// pkg/registry/rest/create.go) runs the strategy's Validate, the common
// metadata checks and the declarative validation of the kind, as BeforeCreate
// does. An error means a kind this oracle does not know.
func validateBuiltin(obj map[string]any) (field.ErrorList, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	internal, gvk, err := legacyscheme.Codecs.UniversalDecoder().Decode(b, nil, nil)
	if err != nil {
		return nil, err
	}
	r, ok := strategies[gvk.GroupKind()]
	if !ok {
		return nil, fmt.Errorf("no validation for %s", gvk)
	}
	md, _ := obj["metadata"].(map[string]any)
	ns, _ := md["namespace"].(string)
	name, _ := md["name"].(string)
	ctx := genericapirequest.WithNamespace(context.Background(), ns)
	ctx = genericapirequest.WithRequestInfo(ctx, &genericapirequest.RequestInfo{
		IsResourceRequest: true, Verb: "create", APIGroup: gvk.Group, APIVersion: gvk.Version,
		Resource: r.resource, Namespace: ns, Name: name,
	})
	// The registry's store gives the object its UID and creation time
	// before the strategy prepares it (k8s.io/apiserver
	// pkg/registry/generic/registry/store.go Create): a Job's selector is
	// made from its UID.
	if m, err := meta.Accessor(internal); err == nil {
		rest.FillObjectMetaSystemFields(m)
	}
	r.strategy.PrepareForCreate(ctx, internal)
	return rest.ValidateCreate(ctx, internal, r.strategy), nil
}

// strategies are the registry strategies of the kinds the function composes.
var strategies = map[schema.GroupKind]struct {
	resource string
	strategy rest.RESTCreateStrategy
}{
	{Group: "apps", Kind: "Deployment"}:                       {"deployments", deployment.Strategy},
	{Kind: "Service"}:                                         {"services", service.Strategy},
	{Kind: "ConfigMap"}:                                       {"configmaps", configmap.Strategy},
	{Kind: "ServiceAccount"}:                                  {"serviceaccounts", serviceaccount.Strategy},
	{Kind: "PersistentVolumeClaim"}:                           {"persistentvolumeclaims", persistentvolumeclaim.Strategy},
	{Group: "networking.k8s.io", Kind: "Ingress"}:             {"ingresses", ingress.Strategy},
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:       {"networkpolicies", networkpolicy.Strategy},
	{Group: "policy", Kind: "PodDisruptionBudget"}:            {"poddisruptionbudgets", poddisruptionbudget.Strategy},
	{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"}:   {"horizontalpodautoscalers", horizontalpodautoscaler.Strategy},
	{Group: "rbac.authorization.k8s.io", Kind: "Role"}:        {"roles", role.Strategy},
	{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}: {"rolebindings", rolebinding.Strategy},
	{Group: "batch", Kind: "Job"}:                             {"jobs", job.Strategy},
}
