package fn

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/resource/composite"
	"github.com/crossplane/function-sdk-go/response"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Custom condition types on the XR. Crossplane owns Ready and Synced and
// drops them from a function's conditions.
const (
	conditionEnginesReady = "EnginesReady"
	conditionRouterReady  = "RouterReady"
	conditionStorageReady = "StorageReady"
)

// ready tells Crossplane whether one composed object is ready, from its
// observed state. Crossplane marks the XR Ready only when every composed
// object is; it derives nothing by itself for these kinds.
func ready(o resource.ObservedComposed) resource.Ready {
	if o.Resource == nil {
		return resource.ReadyFalse // not created yet
	}
	switch o.Resource.GetKind() {
	case "Deployment":
		d, err := asDeployment(o.Resource)
		if err != nil || !deploymentReady(d) {
			return resource.ReadyFalse
		}
	case "PersistentVolumeClaim":
		if phase, _ := o.Resource.GetString("status.phase"); phase != string(corev1.ClaimBound) {
			return resource.ReadyFalse
		}
	}
	// Services, ServiceAccounts, Roles, RoleBindings and ConfigMaps are
	// ready once they exist.
	return resource.ReadyTrue
}

// deploymentReady: the controller has seen the latest spec, every replica
// runs it and is available. A Deployment scaled to 0 is ready once seen.
func deploymentReady(d *appsv1.Deployment) bool {
	if d.Status.ObservedGeneration < d.Generation {
		return false
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if want == 0 {
		return true
	}
	return d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want &&
		deploymentCondition(d, appsv1.DeploymentAvailable) == corev1.ConditionTrue
}

func deploymentCondition(d *appsv1.Deployment, t appsv1.DeploymentConditionType) corev1.ConditionStatus {
	for _, c := range d.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

func asDeployment(u *composed.Unstructured) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		return nil, fmt.Errorf("cannot decode observed Deployment %q: %w", u.GetName(), err)
	}
	return d, nil
}

// stackStatus is what the function observed of a stack.
type stackStatus struct {
	endpoint string
	models   []modelStatus
	router   v1alpha1.RouterStatus
	// routerIssue and claims explain a router or storage that is not ready.
	routerIssue string
	claims      []claimStatus
}

type modelStatus struct {
	v1alpha1.ModelStatus
	ready bool
	issue string // why the model does not serve, for a person to act on
}

type claimStatus struct {
	name  string
	phase string // "" when not created yet
}

// observe summarises the observed composed objects of a stack.
func observe(s *stack, observed map[resource.Name]resource.ObservedComposed) stackStatus {
	st := stackStatus{endpoint: fmt.Sprintf("http://%s.%s.svc.cluster.local/v1", s.names.routerService(), s.namespace)}
	for _, e := range s.engines {
		ms := modelStatus{ModelStatus: v1alpha1.ModelStatus{Name: e.model.Name, ServedModelName: e.served, Replicas: *e.cfg.Replicas}}
		ms.ready, ms.issue = deploymentProgress(observed[resource.Name(engineKey(e.id))], s.names.engineDeployment(e.id), &ms.ReadyReplicas, &ms.AvailableReplicas, &ms.UpdatedReplicas)
		st.models = append(st.models, ms)
		if ownsClaim(e) {
			c := claimStatus{name: s.names.storageClaim(e.id)}
			if o := observed[resource.Name(engineStorageKey(e.id))]; o.Resource != nil {
				c.phase, _ = o.Resource.GetString("status.phase")
				if c.phase == "" {
					c.phase = string(corev1.ClaimPending)
				}
			}
			st.claims = append(st.claims, c)
		}
	}
	st.router.Replicas = s.router.replicas
	var routerReady bool
	routerReady, st.routerIssue = deploymentProgress(observed[routerKey], s.names.routerDeployment(), &st.router.ReadyReplicas, new(int32), new(int32))
	if routerReady {
		st.routerIssue = ""
	}
	return st
}

// deploymentProgress reads an observed Deployment's replica counts and says
// whether it is ready and, if not, why.
func deploymentProgress(o resource.ObservedComposed, name string, readyN, available, updated *int32) (bool, string) {
	if o.Resource == nil {
		return false, fmt.Sprintf("Deployment %s is not created yet", name)
	}
	d, err := asDeployment(o.Resource)
	if err != nil {
		return false, err.Error()
	}
	*readyN, *available, *updated = d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UpdatedReplicas
	if deploymentReady(d) {
		return true, ""
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	issue := fmt.Sprintf("%d/%d replicas available", d.Status.AvailableReplicas, want)
	if d.Status.ObservedGeneration < d.Generation {
		issue += ", rollout not yet observed by the Deployment controller"
	}
	for _, c := range d.Status.Conditions {
		switch {
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse,
			c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
			issue += ": " + c.Message
		}
	}
	return false, issue
}

// writeStatus sets the XR's status fields. Every field is declared in the
// XRD; the API server would prune any other.
func writeStatus(xr *composite.Unstructured, st stackStatus) error {
	models := make([]any, 0, len(st.models))
	readyModels := 0
	for _, m := range st.models {
		if m.ready {
			readyModels++
		}
		models = append(models, map[string]any{
			"name":              m.Name,
			"servedModelName":   m.ServedModelName,
			"replicas":          int64(m.Replicas),
			"readyReplicas":     int64(m.ReadyReplicas),
			"availableReplicas": int64(m.AvailableReplicas),
			"updatedReplicas":   int64(m.UpdatedReplicas),
		})
	}
	for path, v := range map[string]any{
		"status.endpoint":    st.endpoint,
		"status.models":      models,
		"status.readyModels": fmt.Sprintf("%d/%d", readyModels, len(st.models)),
		"status.router": map[string]any{
			"replicas":      int64(st.router.Replicas),
			"readyReplicas": int64(st.router.ReadyReplicas),
		},
	} {
		if err := xr.SetValue(path, v); err != nil {
			return fmt.Errorf("cannot set %s: %w", path, err)
		}
	}
	return nil
}

// setConditions reports, for a person, whether the engines, the router and
// the model caches are ready and what to look at when they are not.
func setConditions(rsp *fnv1.RunFunctionResponse, st stackStatus) {
	var waiting []string
	for _, m := range st.models {
		if !m.ready {
			waiting = append(waiting, m.Name+": "+m.issue)
		}
	}
	if len(waiting) == 0 {
		response.ConditionTrue(rsp, conditionEnginesReady, "Available").
			WithMessage(fmt.Sprintf("all %d models are serving", len(st.models))).TargetCompositeAndClaim()
	} else {
		response.ConditionFalse(rsp, conditionEnginesReady, "Unavailable").
			WithMessage(fmt.Sprintf("%d of %d models not serving: %s", len(waiting), len(st.models), strings.Join(waiting, "; "))).TargetCompositeAndClaim()
	}

	if st.routerIssue == "" {
		response.ConditionTrue(rsp, conditionRouterReady, "Available").
			WithMessage(fmt.Sprintf("router is routing: %d/%d replicas ready", st.router.ReadyReplicas, st.router.Replicas)).TargetCompositeAndClaim()
	} else {
		response.ConditionFalse(rsp, conditionRouterReady, "Unavailable").
			WithMessage("router: " + st.routerIssue).TargetCompositeAndClaim()
	}

	var unbound []string
	for _, c := range st.claims {
		switch c.phase {
		case string(corev1.ClaimBound):
		case "":
			unbound = append(unbound, fmt.Sprintf("storage claim %s is not created yet", c.name))
		default:
			unbound = append(unbound, fmt.Sprintf("storage claim %s is %s", c.name, c.phase))
		}
	}
	switch {
	case len(st.claims) == 0:
		response.ConditionTrue(rsp, conditionStorageReady, "NoClaims").
			WithMessage("the stack creates no model cache claims").TargetCompositeAndClaim()
	case len(unbound) == 0:
		response.ConditionTrue(rsp, conditionStorageReady, "Bound").
			WithMessage(fmt.Sprintf("all %d model cache claims are bound", len(st.claims))).TargetCompositeAndClaim()
	default:
		response.ConditionFalse(rsp, conditionStorageReady, "Unbound").
			WithMessage(strings.Join(unbound, "; ") + ": check the StorageClass and that a volume can be provisioned").TargetCompositeAndClaim()
	}
}
