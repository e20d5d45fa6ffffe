// Package status reads a stack's observed objects and pods: whether each
// composed object is ready, the XR's status fields, and conditions that say
// what is not ready and why.
package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vllm-project/function-vllm-stack/internal/text"
	"github.com/vllm-project/function-vllm-stack/stack"
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

	// reasonRefused: the function refused to compose the stack.
	reasonRefused = "Refused"
)

// severity orders the reasons of a condition that is False, most severe
// first: a component with several issues reports the one a person must act
// on (no GPU free) rather than one that passes by itself (rolling out).
var severity = []string{
	reasonUnschedulable, reasonImagePullError, reasonCrashLoopBackOff, reasonContainerConfig,
	reasonPodFailed, reasonReplicaFailure, reasonProgressDeadline, reasonClaimLost, reasonNotAccepted,
	reasonFillFailed, reasonDownloading, reasonStarting, reasonNotReady, reasonContainerWaiting, reasonPodPending, reasonClaimPending,
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

// Ready tells whether one composed object is ready, from its observed state
// (nil: not created yet). Crossplane marks the XR Ready only when every
// composed object is; it derives nothing by itself for these kinds.
func Ready(o *unstructured.Unstructured) bool {
	if o == nil {
		return false
	}
	switch o.GetKind() {
	case "Deployment":
		d, err := asDeployment(o)
		if err != nil || !deploymentReady(d) {
			return false
		}
	case "LeaderWorkerSet":
		l, err := asLeaderWorkerSet(o)
		if err != nil || !leaderWorkerSetReady(l) {
			return false
		}
	case "ScaledObject":
		// KEDA reports whether it can read the metric and drive the
		// Deployment's HorizontalPodAutoscaler.
		if !conditionTrue(o, "Ready") {
			return false
		}
	case "InferencePool":
		if ok, _ := poolAccepted(o, o.GetName()); !ok {
			return false
		}
	case "PersistentVolumeClaim":
		if phase, _ := stringAt(o, "status", "phase"); phase != string(corev1.ClaimBound) {
			return false
		}
	case "Job":
		// A model cache's fill Job (storage.prefetch) is ready once done.
		if !conditionTrue(o, "Complete") {
			return false
		}
	}
	// Services, ServiceAccounts, Roles, RoleBindings and ConfigMaps are
	// ready once they exist.
	return true
}

// stringAt is the string at path of o, as fieldpath reads it for
// GetString: false when it is missing or not a string.
func stringAt(o *unstructured.Unstructured, path ...string) (string, bool) {
	v, found, err := unstructured.NestedString(o.Object, path...)
	return v, found && err == nil
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

func asDeployment(u *unstructured.Unstructured) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
		return nil, fmt.Errorf("cannot decode observed Deployment %q: %w", u.GetName(), err)
	}
	return d, nil
}

// Status is what the function observed of a stack.
type Status struct {
	Endpoint string
	Models   []Model
	Router   Router
	Claims   []Claim
}

// A Model is one model's engine as observed.
type Model struct {
	v1alpha1.ModelStatus
	Progress
}

// The Router is the router as observed.
type Router struct {
	v1alpha1.RouterStatus
	Progress
}

// Progress says whether a component is ready and, when it is not, why: a
// reason for the condition and a message for a person to act on.
type Progress struct {
	Ready   bool
	Reason  string
	Message string
}

// A Claim is a model cache claim, or a KV offload tier's (Offload), as
// observed.
type Claim struct {
	Name    string
	Phase   string // "" when not created yet
	Offload bool
}

// Observed are the stack's composed objects Crossplane observed, by
// composition resource name.
type Observed map[string]*unstructured.Unstructured

// Pods are the pods of one Deployment, decoded on demand: only a Deployment
// that is not ready needs them.
type Pods func() []corev1.Pod

// StackPods are the stack's pods: the engines' by their EnginePart's PodName,
// and the router's. Empty when Crossplane has not sent them (yet).
type StackPods struct {
	Engines map[string]Pods
	Router  Pods
}

// Observe summarises the observed composed objects and pods of a stack.
func Observe(parts stack.Parts, observed Observed, pods StackPods) Status {
	st := Status{Endpoint: parts.Endpoint, Models: make([]Model, 0, len(parts.Engines))}
	for _, e := range parts.Engines {
		var ds appsv1.DeploymentStatus
		var p Progress
		if e.LeaderWorkerSet != "" {
			ds, p = leaderWorkerSetProgress(observed[e.Key], e.LeaderWorkerSet, pods.Engines[e.PodName])
		} else {
			ds, p = deploymentProgress(observed[e.Key], e.Deployment, pods.Engines[e.PodName])
		}
		replicas := e.Replicas
		if e.Autoscaled {
			replicas = ds.Replicas // what the autoscaler runs now
		}
		switch {
		case e.ScaleToZero && p.Ready && replicas == 0 && observed[e.Key] != nil:
			// At zero by design, not down: KEDA wakes it on a request.
			p.Message = msgScaledToZero
		case e.ScaleToZero && !p.Ready && ds.ReadyReplicas == 0 && replicas > 0:
			// Woken from zero: its first replica is starting.
			p.Message = msgWaking + p.Message
		}
		cache := modelCache(e, observed)
		if filledByJob(cache) && cache.State != cacheCached && observed[e.Key] == nil {
			p = waitingForCache(cache) // withheld until its cache is filled
		}
		st.Models = append(st.Models, Model{
			ModelStatus: v1alpha1.ModelStatus{
				Name: e.Model, Role: e.Role, ServedModelName: e.ServedModelName, Replicas: replicas,
				ReadyReplicas: ds.ReadyReplicas, AvailableReplicas: ds.AvailableReplicas, UpdatedReplicas: ds.UpdatedReplicas,
				Adapters:            adapterStatus(e.Adapters, pods.Engines[e.PodName]),
				InferenceObjectives: objectiveStatus(e.Objectives),
				ModelCache:          cache,
				Version:             versionStatus(e.Version),
			},
			Progress: p,
		})
		for _, c := range []Claim{{Name: e.Claim}, {Name: e.OffloadClaim, Offload: true}} {
			key := map[bool]string{false: e.ClaimKey, true: e.OffloadClaimKey}[c.Offload]
			if key == "" {
				continue
			}
			if o := observed[key]; o != nil {
				c.Phase, _ = stringAt(o, "status", "phase")
				c.Phase = text.Clip(cmp.Or(c.Phase, string(corev1.ClaimPending)), maxPhaseLength) // no status yet
			}
			st.Claims = append(st.Claims, c)
		}
	}

	moving(st.Models, parts.Moves)

	if len(parts.Pools) > 0 {
		st.Router = routingProgress(parts.Pools, observed)
		st.Router.moving(parts.RoutingMove)
		return st
	}
	r := parts.Router
	ds, p := deploymentProgress(observed[r.Key], r.Deployment, pods.Router)
	// The router routes only through its Service: the endpoint is its DNS name.
	if observed[r.ServiceKey] == nil {
		missing := fmt.Sprintf("Service %s is not created yet", r.Service)
		if p.Ready {
			p = Progress{Reason: reasonCreating, Message: missing}
		} else {
			p.Reason, p.Message = worst(p.Reason, reasonCreating), p.Message+"; "+missing
		}
	}
	routerReplicas := r.Replicas
	if r.Autoscaled {
		routerReplicas = ds.Replicas
	}
	st.Router = Router{RouterStatus: routerStatus(r.RouterType, routerReplicas, ds.ReadyReplicas), Progress: p}
	st.Router.moving(parts.RoutingMove)
	return st
}

// moving says, of a routing layer not ready yet while the stack switches
// to it, that the old one serves meanwhile.
func (r *Router) moving(note string) {
	if note != "" && !r.Ready {
		r.Message = text.Clip(note+"; "+r.Message, maxMessageLength)
	}
}

func routerStatus(routerType string, replicas, ready int32) v1alpha1.RouterStatus {
	return v1alpha1.RouterStatus{RouterType: routerType, Replicas: replicas, ReadyReplicas: ready}
}

// moving says, of each model changing topology whose new workload is not
// ready, that the old one keeps serving: the model is not down, and a new
// workload that cannot start (no GPU free) leaves it so. The reason stays
// the new workload's, what a person may have to act on.
func moving(models []Model, moves []stack.Move) {
	for _, mv := range moves {
		for i := range models {
			m := &models[i]
			if m.Name != mv.Model || m.Ready {
				continue
			}
			m.Message = fmt.Sprintf("moving to %s: the old workload (%s) serves the model until the new one is ready; %s", mv.To, mv.From, m.Message)
		}
	}
}

// deploymentProgress reads an observed Deployment's replica counts and says
// whether it is ready and, if not, why: from the Deployment's status and
// conditions, then from its pods.
func deploymentProgress(o *unstructured.Unstructured, name string, pods Pods) (appsv1.DeploymentStatus, Progress) {
	if o == nil {
		return appsv1.DeploymentStatus{}, Progress{Reason: reasonCreating, Message: fmt.Sprintf("Deployment %s is not created yet", name)}
	}
	d, err := asDeployment(o)
	if err != nil {
		return appsv1.DeploymentStatus{}, Progress{Reason: reasonUnavailable, Message: clean(err.Error())}
	}
	if deploymentReady(d) {
		return d.Status, Progress{Ready: true, Reason: reasonAvailable}
	}

	want := wantReplicas(d)
	p := Progress{Reason: reasonUnavailable, Message: fmt.Sprintf("%d/%d replicas available", d.Status.AvailableReplicas, want)}
	switch {
	case d.Status.ObservedGeneration < d.Generation:
		p.Reason = reasonRollingOut
		p.Message += ", the Deployment controller has not seen the latest spec yet"
	case d.Status.UpdatedReplicas < want:
		p.Reason = reasonRollingOut
		p.Message += fmt.Sprintf(", %d/%d updated to the latest spec", d.Status.UpdatedReplicas, want)
	case d.Status.AvailableReplicas >= want:
		// Every replica counts as available, yet the Deployment does not
		// say Available: its condition says why.
		p.Message += ", but the Deployment is not Available"
		if c := conditionOf(d, appsv1.DeploymentAvailable); c != nil {
			p.Message += ": " + clean(join(c.Reason, c.Message))
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
			p.Reason = worst(p.Reason, reasonProgressDeadline)
			p.Message += ": Deployment exceeded its progress deadline"
		case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue && !failure:
			// e.g. FailedCreate: a ResourceQuota forbids the pods.
			failure = true
			p.Reason = worst(p.Reason, reasonReplicaFailure)
			p.Message += ": " + clean(join(c.Reason, c.Message))
		}
	}
	if reason, lines := podIssues(explaining(pods)); len(lines) > 0 {
		p.Reason = worst(p.Reason, reason)
		p.Message += "; " + strings.Join(lines, "; ")
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

// Fields are the XR's status fields. Every field is declared in the XRD; the
// API server would prune any other.
func (st Status) Fields() map[string]any {
	models := make([]any, 0, len(st.Models))
	for _, m := range st.Models {
		fields := map[string]any{
			"name":              m.Name,
			"servedModelName":   m.ServedModelName,
			"replicas":          int64(m.Replicas),
			"readyReplicas":     int64(m.ReadyReplicas),
			"availableReplicas": int64(m.AvailableReplicas),
			"updatedReplicas":   int64(m.UpdatedReplicas),
		}
		if m.Role != "" {
			fields["role"] = m.Role
		}
		if len(m.Adapters) > 0 {
			adapters := make([]any, 0, len(m.Adapters))
			for _, a := range m.Adapters {
				f := map[string]any{"name": a.Name, "loaded": int64(a.Loaded), "pods": int64(a.Pods)}
				if a.Reason != "" {
					f["reason"] = a.Reason
				}
				adapters = append(adapters, f)
			}
			fields["adapters"] = adapters
		}
		if len(m.InferenceObjectives) > 0 {
			objectives := make([]any, 0, len(m.InferenceObjectives))
			for _, o := range m.InferenceObjectives {
				objectives = append(objectives, map[string]any{"name": o.Name, "header": o.Header})
			}
			fields["inferenceObjectives"] = objectives
		}
		if c := m.ModelCache; c != nil {
			f := map[string]any{"state": c.State}
			if c.Reason != "" {
				f["reason"] = c.Reason
			}
			fields["modelCache"] = f
		}
		if v := m.Version; v != nil {
			fields["version"] = map[string]any{"name": v.Name, "share": int64(v.Share), "state": v.State}
		}
		models = append(models, fields)
	}
	ready, total := readyModels(st.Models)
	return map[string]any{
		"endpoint":    st.Endpoint,
		"models":      models,
		"readyModels": fmt.Sprintf("%d/%d", ready, total),
		"router": map[string]any{
			"routerType":    st.Router.RouterType,
			"replicas":      int64(st.Router.Replicas),
			"readyReplicas": int64(st.Router.ReadyReplicas),
		},
	}
}

// A Condition is one of the XR's conditions, for the XR and its claim.
type Condition struct {
	Type    string
	True    bool
	Reason  string
	Message string
}

// Conditions say, for a person, whether the engines, the router and the
// model caches are ready and what to look at when they are not. The messages
// hold no times or counters that change by themselves, so an unchanged stack
// gets unchanged conditions.
func (st Status) Conditions() []Condition {
	conds := []Condition{enginesCondition(st.Models), routerCondition(st.Router), storageCondition(st.Claims)}
	if c, ok := modelCacheCondition(st.Models); ok {
		conds = append(conds, c)
	}
	return conds
}

// Refused are the conditions of a stack the function refused to compose:
// every one False, with the refusal's message.
func Refused(message string) []Condition {
	conds := make([]Condition, 0, 3)
	for _, c := range []string{conditionEnginesReady, conditionRouterReady, conditionStorageReady} {
		conds = append(conds, Condition{c, false, reasonRefused, message})
	}
	return conds
}

// readyModels counts the models, and those ready: a disaggregated model is
// ready when both its groups are.
func readyModels(models []Model) (ready, total int) {
	unready := map[string]bool{}
	var names []string
	for _, m := range models {
		if _, seen := unready[m.Name]; !seen {
			names = append(names, m.Name)
		}
		unready[m.Name] = unready[m.Name] || !m.Ready
	}
	for _, n := range names {
		if !unready[n] {
			ready++
		}
	}
	return ready, len(names)
}

// displayName names a model, and the group of a disaggregated one.
func (m Model) displayName() string {
	if v := m.Version; v != nil && v.Name == stack.VersionCanary {
		return m.Name + " (canary)"
	}
	if m.Role == "" {
		return m.Name
	}
	return m.Name + " (" + m.Role + ")"
}

// msgScaledToZero is the message of a model at zero by scaleToZero.
const msgScaledToZero = "scaled to zero while idle: the next request wakes it"

// msgWaking starts the message of a model woken from zero whose first
// replica is not ready yet.
const msgWaking = "starting from zero (woken by a request, or first applied): "

func enginesCondition(models []Model) Condition {
	var scaledDown, asleep, reasons []string
	var waiting []string
	for _, m := range models {
		switch {
		case !m.Ready:
			reasons = append(reasons, m.Reason)
			if len(waiting) < maxModelsListed {
				waiting = append(waiting, m.displayName()+": "+m.Message)
			}
		case m.Replicas == 0 && m.Message == msgScaledToZero:
			asleep = append(asleep, m.displayName())
		case m.Replicas == 0:
			scaledDown = append(scaledDown, m.displayName())
		}
	}
	ready, total := readyModels(models)
	summary := fmt.Sprintf("%d/%d models ready", ready, total)
	if len(reasons) == 0 {
		if len(scaledDown) > 0 {
			summary += "; scaled to 0 replicas: " + strings.Join(scaledDown, ", ")
		}
		if len(asleep) > 0 {
			summary += "; scaled to zero while idle, woken by the next request: " + strings.Join(asleep, ", ")
		}
		return Condition{conditionEnginesReady, true, reasonAvailable, text.Clip(summary, maxMessageLength)}
	}
	if more := len(reasons) - len(waiting); more > 0 {
		waiting = append(waiting, fmt.Sprintf("%d more models not ready", more))
	}
	return Condition{conditionEnginesReady, false, worst(reasons...), text.Clip(summary+". "+strings.Join(waiting, ". "), maxMessageLength)}
}

func routerCondition(r Router) Condition {
	if !r.Ready {
		return Condition{conditionRouterReady, false, r.Reason, text.Clip(r.Message, maxMessageLength)}
	}
	msg := fmt.Sprintf("%d/%d router replicas ready", r.ReadyReplicas, r.Replicas)
	if r.RouterType == RouterTypeInferenceExtension {
		msg = fmt.Sprintf("%d/%d endpoint picker replicas ready; every model's InferencePool is accepted by its Gateway", r.ReadyReplicas, r.Replicas)
	}
	if r.Replicas == 0 {
		msg = "the router is scaled to 0 replicas: nothing answers at the endpoint"
	}
	return Condition{conditionRouterReady, true, reasonAvailable, msg}
}

func storageCondition(claims []Claim) Condition {
	if len(claims) == 0 {
		return Condition{conditionStorageReady, true, reasonNoClaims, "the stack creates no model cache claims"}
	}
	var problems, reasons []string
	pending := false
	offload := 0
	for _, c := range claims {
		what := "storage claim"
		if c.Offload {
			what, offload = "KV offload claim", offload+1 // its engines' filesystem tier is not mounted
		}
		switch c.Phase {
		case string(corev1.ClaimBound):
			continue
		case "":
			reasons = append(reasons, reasonCreating)
			problems = append(problems, fmt.Sprintf("%s %s is not created yet", what, c.Name))
		case string(corev1.ClaimLost):
			reasons = append(reasons, reasonClaimLost)
			problems = append(problems, fmt.Sprintf("%s %s is Lost: its PersistentVolume no longer exists", what, c.Name))
		default:
			pending = true
			reasons = append(reasons, reasonClaimPending)
			problems = append(problems, fmt.Sprintf("%s %s is %s", what, c.Name, c.Phase))
		}
	}
	if len(problems) == 0 {
		var bound []string
		if n := len(claims) - offload; n > 0 {
			bound = append(bound, fmt.Sprintf("%d/%d model cache claims bound", n, n))
		}
		if offload > 0 {
			bound = append(bound, fmt.Sprintf("%d/%d KV offload claims bound", offload, offload))
		}
		return Condition{conditionStorageReady, true, reasonBound, strings.Join(bound, ", ")}
	}
	msg := strings.Join(problems, "; ")
	if pending {
		// With a WaitForFirstConsumer StorageClass (the usual default) a claim
		// stays Pending until its pod is scheduled: look at EnginesReady too.
		msg += ": a claim binds once a volume is provisioned for it; with a WaitForFirstConsumer StorageClass, only after its engine pod is scheduled"
	}
	return Condition{conditionStorageReady, false, worst(reasons...), text.Clip(msg, maxMessageLength)}
}

// conditionTrue reports whether an observed object has condition typ True.
func conditionTrue(u *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
}

// objectiveStatus is what the status says of a model's objectives: what
// the spec asks, nothing observed (the picker reports nothing on them).
func objectiveStatus(parts []stack.ObjectivePart) []v1alpha1.InferenceObjectiveStatus {
	var out []v1alpha1.InferenceObjectiveStatus
	for _, o := range parts {
		out = append(out, v1alpha1.InferenceObjectiveStatus{Name: o.Name, Header: o.Header})
	}
	return out
}
