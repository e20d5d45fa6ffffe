package kubediff

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/apps"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	appsvalidation "k8s.io/kubernetes/pkg/apis/apps/validation"
	"k8s.io/kubernetes/pkg/apis/autoscaling"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	autoscalingvalidation "k8s.io/kubernetes/pkg/apis/autoscaling/validation"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/apis/networking"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	networkingvalidation "k8s.io/kubernetes/pkg/apis/networking/validation"
	"k8s.io/kubernetes/pkg/apis/policy"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	policyvalidation "k8s.io/kubernetes/pkg/apis/policy/validation"
	"k8s.io/kubernetes/pkg/apis/rbac"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	rbacvalidation "k8s.io/kubernetes/pkg/apis/rbac/validation"
)

// validateBuiltin reports what the API server refuses in obj, an object of
// a kind Kubernetes builds in: decoded, defaulted and converted to the
// internal type as the API server decodes a request body, then validated as
// the kind's registry strategy validates a create (Validate of
// pkg/registry/<group>/<resource>/strategy.go at v1.37.2; the declarative
// validation the strategies also run mirrors those hand-written checks).
// An error means a kind this oracle does not know.
func validateBuiltin(obj map[string]any) (field.ErrorList, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	internal, _, err := legacyscheme.Codecs.UniversalDecoder().Decode(b, nil, nil)
	if err != nil {
		return nil, err
	}
	switch o := internal.(type) {
	case *apps.Deployment:
		return appsvalidation.ValidateDeployment(o, podutil.GetValidationOptionsFromPodTemplate(&o.Spec.Template, nil)), nil
	case *core.Service:
		return corevalidation.ValidateServiceCreate(o), nil
	case *core.ConfigMap:
		return corevalidation.ValidateConfigMap(o), nil
	case *core.ServiceAccount:
		return corevalidation.ValidateServiceAccount(o), nil
	case *core.PersistentVolumeClaim:
		return corevalidation.ValidatePersistentVolumeClaim(o, corevalidation.ValidationOptionsForPersistentVolumeClaim(o, nil)), nil
	case *networking.Ingress:
		return networkingvalidation.ValidateIngressCreate(o), nil
	case *networking.NetworkPolicy:
		return networkingvalidation.ValidateNetworkPolicy(o, networkingvalidation.ValidationOptionsForNetworking(o, nil)), nil
	case *policy.PodDisruptionBudget:
		return policyvalidation.ValidatePodDisruptionBudget(o, policyvalidation.PodDisruptionBudgetValidationOptions{}), nil
	case *autoscaling.HorizontalPodAutoscaler:
		return autoscalingvalidation.ValidateHorizontalPodAutoscaler(o, hpaCreateOptions), nil
	case *rbac.Role:
		return rbacvalidation.ValidateRole(o), nil
	case *rbac.RoleBinding:
		return rbacvalidation.ValidateRoleBinding(o), nil
	}
	return nil, fmt.Errorf("no validation for %T", internal)
}

// hpaCreateOptions are the options validationOptionsForHorizontalPodAutoscaler
// (pkg/registry/autoscaling/horizontalpodautoscaler/strategy.go, v1.37.2)
// gives a create whose target is no ReplicationController, with the
// HPAScaleToZero feature gate off (its default, alpha).
var hpaCreateOptions = autoscalingvalidation.HorizontalPodAutoscalerSpecValidationOptions{
	MinReplicasLowerBound:           1,
	ScaleTargetRefValidationOptions: autoscalingvalidation.CrossVersionObjectReferenceValidationOptions{},
	ObjectMetricsValidationOptions:  autoscalingvalidation.CrossVersionObjectReferenceValidationOptions{AllowEmptyAPIGroup: true},
}
