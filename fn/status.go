package fn

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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

// Reasons of the conditions.
const (
	reasonAvailable = "Available"
	reasonBound     = "Bound"
	reasonNoClaims  = "NoClaims"

	reasonUnschedulable    = "Unschedulable"
	reasonImagePullError   = "ImagePullError"
	reasonCrashLoopBackOff = "CrashLoopBackOff"
	reasonContainerConfig  = "ContainerConfigError"
	reasonPodFailed        = "PodFailed"
	reasonReplicaFailure   = "ReplicaFailure"
	reasonProgressDeadline = "ProgressDeadlineExceeded"
	reasonClaimLost        = "ClaimLost"
	reasonStarting         = "Starting"
	reasonNotReady         = "NotReady"
	reasonContainerWaiting = "ContainerWaiting"
	reasonPodPending       = "PodPending"
	reasonClaimPending     = "ClaimPending"
	reasonRollingOut       = "RollingOut"
	reasonUnavailable      = "Unavailable"
	reasonCreating         = "Creating"
)

// severity orders the reasons of a condition that is False, most severe
// first: a component with several issues reports the one a person must act
// on (no GPU free) rather than one that passes by itself (rolling out).
var severity = []string{
	reasonUnschedulable, reasonImagePullError, reasonCrashLoopBackOff, reasonContainerConfig,
	reasonPodFailed, reasonReplicaFailure, reasonProgressDeadline, reasonClaimLost,
	reasonStarting, reasonNotReady, reasonContainerWaiting, reasonPodPending, reasonClaimPending,
	reasonRollingOut, reasonUnavailable, reasonCreating,
}

// worst returns the most severe of reasons.
func worst(reasons ...string) string {
	found, rank := "", len(severity)
	for _, r := range reasons {
		if i := slices.Index(severity, r); i >= 0 && i < rank {
			found, rank = r, i
		}
	}
	return found
}

// maxModelsListed bounds the models the EnginesReady message explains.
const maxModelsListed = 8

// Bounds of what the status repeats of observed objects, which a broken or
// hostile cluster could make as large as it likes: a claim's phase (a word
// in a cluster that works), and every condition message.
const (
	maxPhaseLength   = 32
	maxMessageLength = 8 << 10
)

// clip shortens s to at most n characters, marking the cut with "...".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}

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
	case "ScaledObject":
		// KEDA reports whether it can read the metric and drive the
		// Deployment's HorizontalPodAutoscaler.
		if !conditionTrue(o.Resource, "Ready") {
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
	want := wantReplicas(d)
	if want == 0 {
		return true
	}
	return d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want &&
		deploymentCondition(d, appsv1.DeploymentAvailable) == corev1.ConditionTrue
}

// wantReplicas is spec.replicas; the API server defaults it to 1.
func wantReplicas(d *appsv1.Deployment) int32 {
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
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
	router   routerStatus
	claims   []claimStatus
}

type modelStatus struct {
	v1alpha1.ModelStatus
	progress
}

type routerStatus struct {
	v1alpha1.RouterStatus
	progress
}

// progress says whether a component is ready and, when it is not, why: a
// reason for the condition and a message for a person to act on.
type progress struct {
	ready   bool
	reason  string
	message string
}

type claimStatus struct {
	name  string
	phase string // "" when not created yet
}

// observe summarises the observed composed objects and pods of a stack.
func observe(s *stack, observed map[resource.Name]resource.ObservedComposed, pods stackPods) stackStatus {
	st := stackStatus{endpoint: endpoint(s)}
	for _, e := range s.engines {
		ds, p := deploymentProgress(observed[resource.Name(engineKey(e.id))], s.names.engineDeployment(e.id), pods.engines[shorten(e.id, maxLabelLength)])
		replicas := *e.cfg.Replicas
		if autoscaled(e) {
			replicas = ds.Replicas // what the autoscaler runs now
		}
		st.models = append(st.models, modelStatus{
			ModelStatus: v1alpha1.ModelStatus{
				Name: e.model.Name, ServedModelName: e.served, Replicas: replicas,
				ReadyReplicas: ds.ReadyReplicas, AvailableReplicas: ds.AvailableReplicas, UpdatedReplicas: ds.UpdatedReplicas,
			},
			progress: p,
		})
		if ownsClaim(e) {
			c := claimStatus{name: s.names.storageClaim(e.id)}
			if o := observed[resource.Name(engineStorageKey(e.id))]; o.Resource != nil {
				c.phase, _ = o.Resource.GetString("status.phase")
				c.phase = clip(or(c.phase, string(corev1.ClaimPending)), maxPhaseLength) // no status yet
			}
			st.claims = append(st.claims, c)
		}
	}

	ds, p := deploymentProgress(observed[routerKey], s.names.routerDeployment(), pods.router)
	// The router routes only through its Service: the endpoint is its DNS name.
	if observed[routerServiceKey].Resource == nil {
		missing := fmt.Sprintf("Service %s is not created yet", s.names.routerService())
		if p.ready {
			p = progress{reason: reasonCreating, message: missing}
		} else {
			p.reason, p.message = worst(p.reason, reasonCreating), p.message+"; "+missing
		}
	}
	routerReplicas := s.router.replicas
	if routerAutoscaled(s) {
		routerReplicas = ds.Replicas
	}
	st.router = routerStatus{
		RouterStatus: v1alpha1.RouterStatus{RouterType: s.router.routerType, Replicas: routerReplicas, ReadyReplicas: ds.ReadyReplicas},
		progress:     p,
	}
	return st
}

// deploymentProgress reads an observed Deployment's replica counts and says
// whether it is ready and, if not, why: from the Deployment's status and
// conditions, then from its pods.
func deploymentProgress(o resource.ObservedComposed, name string, pods podSet) (appsv1.DeploymentStatus, progress) {
	if o.Resource == nil {
		return appsv1.DeploymentStatus{}, progress{reason: reasonCreating, message: fmt.Sprintf("Deployment %s is not created yet", name)}
	}
	d, err := asDeployment(o.Resource)
	if err != nil {
		return appsv1.DeploymentStatus{}, progress{reason: reasonUnavailable, message: clean(err.Error())}
	}
	if deploymentReady(d) {
		return d.Status, progress{ready: true, reason: reasonAvailable}
	}

	want := wantReplicas(d)
	p := progress{reason: reasonUnavailable, message: fmt.Sprintf("%d/%d replicas available", d.Status.AvailableReplicas, want)}
	switch {
	case d.Status.ObservedGeneration < d.Generation:
		p.reason = reasonRollingOut
		p.message += ", the Deployment controller has not seen the latest spec yet"
	case d.Status.UpdatedReplicas < want:
		p.reason = reasonRollingOut
		p.message += fmt.Sprintf(", %d/%d updated to the latest spec", d.Status.UpdatedReplicas, want)
	case d.Status.AvailableReplicas >= want:
		// Every replica counts as available, yet the Deployment does not
		// say Available: its condition says why.
		p.message += ", but the Deployment is not Available"
		if c := conditionOf(d, appsv1.DeploymentAvailable); c != nil {
			p.message += ": " + clean(join(c.Reason, c.Message))
		}
	}
	// A condition type appears once in a Deployment the controller wrote;
	// of a broken or hostile one's repeats, the first counts.
	deadline, failure := false, false
	for _, c := range d.Status.Conditions {
		switch {
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" && !deadline:
			// The message names a ReplicaSet; the reason is what matters.
			deadline = true
			p.reason = worst(p.reason, reasonProgressDeadline)
			p.message += ": Deployment exceeded its progress deadline"
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue && !failure:
			// e.g. FailedCreate: a ResourceQuota forbids the pods.
			failure = true
			p.reason = worst(p.reason, reasonReplicaFailure)
			p.message += ": " + clean(join(c.Reason, c.Message))
		}
	}
	if reason, lines := podIssues(pods.decode()); len(lines) > 0 {
		p.reason = worst(p.reason, reason)
		p.message += "; " + strings.Join(lines, "; ")
	}
	return d.Status, p
}

func conditionOf(d *appsv1.Deployment, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == t {
			return &d.Status.Conditions[i]
		}
	}
	return nil
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
	fields := map[string]any{
		"endpoint":    st.endpoint,
		"models":      models,
		"readyModels": fmt.Sprintf("%d/%d", readyModels, len(st.models)),
		"router": map[string]any{
			"routerType":    st.router.RouterType,
			"replicas":      int64(st.router.Replicas),
			"readyReplicas": int64(st.router.ReadyReplicas),
		},
	}
	// Straight into the status object: SetValue would write each value as
	// JSON and read it back, a tenth of RunFunction's time for the same
	// Struct in the end. Anything but an object at status is left to
	// SetValue, which says what is wrong.
	status, isMap := xr.Object["status"].(map[string]any)
	if _, exists := xr.Object["status"]; exists && !isMap {
		for _, k := range slices.Sorted(maps.Keys(fields)) { // the same error every time
			if err := xr.SetValue("status."+k, fields[k]); err != nil {
				return fmt.Errorf("cannot set status.%s: %w", k, err)
			}
		}
		return nil
	}
	if status == nil {
		status = make(map[string]any, len(fields))
		if xr.Object == nil {
			xr.Object = map[string]any{}
		}
		xr.Object["status"] = status
	}
	maps.Copy(status, fields)
	return nil
}

// setConditions reports, for a person, whether the engines, the router and
// the model caches are ready and what to look at when they are not. The
// messages hold no times or counters that change by themselves, so an
// unchanged stack gets unchanged conditions.
func setConditions(rsp *fnv1.RunFunctionResponse, st stackStatus) {
	enginesCondition(rsp, st.models)
	routerCondition(rsp, st.router)
	storageCondition(rsp, st.claims)
}

func enginesCondition(rsp *fnv1.RunFunctionResponse, models []modelStatus) {
	var scaledDown, reasons []string
	var waiting []string
	for _, m := range models {
		switch {
		case !m.ready:
			reasons = append(reasons, m.reason)
			if len(waiting) < maxModelsListed {
				waiting = append(waiting, m.Name+": "+m.message)
			}
		case m.Replicas == 0:
			scaledDown = append(scaledDown, m.Name)
		}
	}
	summary := fmt.Sprintf("%d/%d models ready", len(models)-len(reasons), len(models))
	if len(reasons) == 0 {
		if len(scaledDown) > 0 {
			summary += "; scaled to 0 replicas: " + strings.Join(scaledDown, ", ")
		}
		response.ConditionTrue(rsp, conditionEnginesReady, reasonAvailable).WithMessage(clip(summary, maxMessageLength)).TargetCompositeAndClaim()
		return
	}
	if more := len(reasons) - len(waiting); more > 0 {
		waiting = append(waiting, fmt.Sprintf("%d more models not ready", more))
	}
	response.ConditionFalse(rsp, conditionEnginesReady, worst(reasons...)).
		WithMessage(clip(summary+". "+strings.Join(waiting, ". "), maxMessageLength)).TargetCompositeAndClaim()
}

func routerCondition(rsp *fnv1.RunFunctionResponse, r routerStatus) {
	if !r.ready {
		response.ConditionFalse(rsp, conditionRouterReady, r.reason).WithMessage(clip(r.message, maxMessageLength)).TargetCompositeAndClaim()
		return
	}
	msg := fmt.Sprintf("%d/%d router replicas ready", r.ReadyReplicas, r.Replicas)
	if r.Replicas == 0 {
		msg = "the router is scaled to 0 replicas: nothing answers at the endpoint"
	}
	response.ConditionTrue(rsp, conditionRouterReady, reasonAvailable).WithMessage(msg).TargetCompositeAndClaim()
}

func storageCondition(rsp *fnv1.RunFunctionResponse, claims []claimStatus) {
	if len(claims) == 0 {
		response.ConditionTrue(rsp, conditionStorageReady, reasonNoClaims).
			WithMessage("the stack creates no model cache claims").TargetCompositeAndClaim()
		return
	}
	var problems, reasons []string
	pending := false
	for _, c := range claims {
		switch c.phase {
		case string(corev1.ClaimBound):
			continue
		case "":
			reasons = append(reasons, reasonCreating)
			problems = append(problems, fmt.Sprintf("storage claim %s is not created yet", c.name))
		case string(corev1.ClaimLost):
			reasons = append(reasons, reasonClaimLost)
			problems = append(problems, fmt.Sprintf("storage claim %s is Lost: its PersistentVolume no longer exists", c.name))
		default:
			pending = true
			reasons = append(reasons, reasonClaimPending)
			problems = append(problems, fmt.Sprintf("storage claim %s is %s", c.name, c.phase))
		}
	}
	if len(problems) == 0 {
		response.ConditionTrue(rsp, conditionStorageReady, reasonBound).
			WithMessage(fmt.Sprintf("%d/%d model cache claims bound", len(claims), len(claims))).TargetCompositeAndClaim()
		return
	}
	msg := strings.Join(problems, "; ")
	if pending {
		// With a WaitForFirstConsumer StorageClass (the usual default) a claim
		// stays Pending until its pod is scheduled: look at EnginesReady too.
		msg += ": a claim binds once a volume is provisioned for it; with a WaitForFirstConsumer StorageClass, only after its engine pod is scheduled"
	}
	response.ConditionFalse(rsp, conditionStorageReady, worst(reasons...)).WithMessage(clip(msg, maxMessageLength)).TargetCompositeAndClaim()
}

// endpoint is the router's OpenAI-compatible URL inside the cluster.
func endpoint(s *stack) string {
	host := s.names.routerService() + "." + s.namespace + ".svc.cluster.local"
	if s.router.servicePort != servicePort {
		host += ":" + strconv.Itoa(int(s.router.servicePort))
	}
	return "http://" + host + "/v1"
}

// conditionTrue reports whether an observed object has condition typ True.
func conditionTrue(u *composed.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}
