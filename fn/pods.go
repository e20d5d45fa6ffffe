package fn

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// Pods are not composed resources, and a Deployment's status only counts
// replicas. To say *why* an engine does not serve (no GPU free, image not
// found, out of memory, missing Secret, still loading the model) the function
// asks Crossplane for the stack's pods as required resources.
const (
	enginePodsRequirement = "engine-pods"
	routerPodsRequirement = "router-pods"
)

// Bounds that keep the XR's conditions (and so the response) small however
// many replicas a model has.
const (
	maxPodIssues    = 3   // distinct pod issues reported per Deployment
	maxDetailLength = 320 // characters of one pod issue: a quota refusal with its limit fits
	maxPodsNamed    = 2   // pod names listed for one issue
	// maxPodNameLength bounds a pod name in a message: a real one is a
	// DNS subdomain, at most 253 characters.
	maxPodNameLength = 253
)

// requirePods asks Crossplane for the stack's engine and router pods, by the
// labels of SPEC §2, in the stack's namespace. The requirements are the same
// on every call, so Crossplane's requirement loop settles after one round.
func requirePods(rsp *fnv1.RunFunctionResponse, s *stack) {
	require(rsp, enginePodsRequirement, podSelector(s, componentEngine))
	require(rsp, routerPodsRequirement, podSelector(s, componentRouter))
}

// require asks Crossplane for the resources a selector matches, sent on the
// next call as required resource name.
func require(rsp *fnv1.RunFunctionResponse, name string, sel *fnv1.ResourceSelector) {
	if rsp.Requirements == nil {
		rsp.Requirements = &fnv1.Requirements{}
	}
	if rsp.Requirements.Resources == nil {
		rsp.Requirements.Resources = map[string]*fnv1.ResourceSelector{}
	}
	rsp.Requirements.Resources[name] = sel
}

func podSelector(s *stack, component string) *fnv1.ResourceSelector {
	return &fnv1.ResourceSelector{
		ApiVersion: "v1",
		Kind:       "Pod",
		Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{
			Labels: map[string]string{labelInstance: s.name, labelComponent: component},
		}},
		Namespace: ptr.To(s.namespace),
	}
}

// stackPods are the stack's pods that Crossplane sent. On the first call of a
// reconcile Crossplane has not fetched them yet: then both are empty and the
// status says nothing about pods.
type stackPods struct {
	engines map[string]podSet // by label app.kubernetes.io/name: the engine's id
	router  podSet
}

// A podSet is pods as Crossplane sent them. They are decoded only to explain
// a Deployment that is not ready: in a serving stack, never.
type podSet []*structpb.Struct

func requiredPods(req *fnv1.RunFunctionRequest) stackPods {
	sp := stackPods{engines: map[string]podSet{}, router: onlyPods(requiredResources(req, routerPodsRequirement))}
	for _, p := range onlyPods(requiredResources(req, enginePodsRequirement)) {
		name := p.GetFields()["metadata"].GetStructValue().GetFields()["labels"].GetStructValue().GetFields()[labelName].GetStringValue()
		sp.engines[name] = append(sp.engines[name], p)
	}
	return sp
}

// onlyPods drops what says it is not a v1 Pod: Crossplane sends what the
// selector asked for, and a broken cluster may send anything.
func onlyPods(rs []*structpb.Struct) podSet {
	pods := make(podSet, 0, len(rs))
	for _, r := range rs {
		av, kind := r.GetFields()["apiVersion"].GetStringValue(), r.GetFields()["kind"].GetStringValue()
		if (av == "" || av == "v1") && (kind == "" || kind == "Pod") {
			pods = append(pods, r)
		}
	}
	return pods
}

// decode decodes the pods, sorted by name. Pods that are going away
// (terminating, or completed) say nothing about the stack. A pod that does
// not decode is skipped: pods only explain the status, and must never stop
// the stack from being composed.
func (ps podSet) decode() []corev1.Pod {
	pods := make([]corev1.Pod, 0, len(ps))
	for _, r := range ps {
		p := corev1.Pod{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(decodeFields(r, podFields), &p); err != nil {
			continue
		}
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		pods = append(pods, p)
	}
	slices.SortStableFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods
}

// An issue is why something does not serve: a reason for the condition (a
// CamelCase word) and a message for a person.
type issue struct {
	reason string
	detail string
}

// podIssue says why a pod does not serve; ok is false for a ready pod. The
// detail holds no restart counts, back-off delays or times: they change on
// every restart and would make the XR's status churn.
func podIssue(p corev1.Pod) (issue, bool) {
	if podCondition(p, corev1.PodReady) == corev1.ConditionTrue {
		return issue{}, false
	}
	if p.Status.Phase == corev1.PodFailed {
		return issue{reasonPodFailed, clean("failed: " + join(p.Status.Reason, p.Status.Message))}, true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			// The scheduler's message says what is missing, e.g.
			// "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."
			return issue{reasonUnschedulable, clean("unschedulable: " + or(c.Message, c.Reason))}, true
		}
	}
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if i, ok := containerIssue(cs); ok {
			return i, true
		}
	}
	return issue{reasonPodPending, "not ready yet: " + or(string(p.Status.Phase), "Pending")}, true
}

// containerIssue says why one container keeps its pod from being ready.
func containerIssue(cs corev1.ContainerStatus) (issue, bool) {
	c := "container " + cs.Name
	switch s := cs.State; {
	case s.Waiting != nil:
		w := s.Waiting
		switch w.Reason {
		case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
			return issue{reasonImagePullError, clean(c + " cannot pull image " + cs.Image + ": " + join(w.Reason, w.Message))}, true
		case "CrashLoopBackOff":
			// The back-off message names a growing delay; the last exit is
			// what a person can act on.
			return issue{reasonCrashLoopBackOff, clean(c + " keeps crashing" + lastExit(cs))}, true
		case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
			// e.g. `secret "huggingface-token" not found`.
			return issue{reasonContainerConfig, clean(c + " cannot start: " + join(w.Reason, w.Message))}, true
		default: // ContainerCreating, PodInitializing, ...
			return issue{reasonContainerWaiting, clean(c + " is waiting: " + join(w.Reason, w.Message) + lastExit(cs))}, true
		}
	case s.Terminated != nil:
		t := s.Terminated
		return issue{reasonCrashLoopBackOff, clean(fmt.Sprintf("%s terminated: %s (exit code %d)", c, or(t.Reason, "Error"), t.ExitCode) + memoryHint(t.Reason))}, true
	case s.Running != nil && (cs.Started == nil || !*cs.Started):
		// The startup probe allows 10 minutes: vLLM downloads the weights
		// (unless cached on the model volume) and loads them onto the GPU.
		return issue{reasonStarting, clean(c + " has not passed its startup probe yet (downloading or loading the model)" + lastExit(cs))}, true
	case !cs.Ready:
		return issue{reasonNotReady, clean(c + " is running but fails its readiness probe" + lastExit(cs))}, true
	}
	return issue{}, false
}

// lastExit describes why the container last stopped, if it ever did.
func lastExit(cs corev1.ContainerStatus) string {
	t := cs.LastTerminationState.Terminated
	if t == nil {
		return ""
	}
	return fmt.Sprintf(", last exit: %s (exit code %d)", or(t.Reason, "Error"), t.ExitCode) + memoryHint(t.Reason)
}

func memoryHint(reason string) string {
	if reason == "OOMKilled" {
		return ": raise resources.memory"
	}
	return ""
}

func podCondition(p corev1.Pod, t corev1.PodConditionType) corev1.ConditionStatus {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// podIssues summarises why pods do not serve: the most severe reason, and
// one line per distinct issue naming its pods, at most maxPodIssues lines.
// Pods come sorted by name and the sort is stable, so the same pods give the
// same lines whatever order Crossplane sent them in.
func podIssues(pods []corev1.Pod) (string, []string) {
	type named struct {
		name string
		issue
	}
	var unready []named
	for _, p := range pods {
		if i, ok := podIssue(p); ok {
			unready = append(unready, named{clip(p.Name, maxPodNameLength), i})
		}
	}
	// Pods of the same name (the API server never sends two) go in the
	// order of their issues, not the order Crossplane sent them in.
	slices.SortStableFunc(unready, func(a, b named) int {
		return cmp.Or(strings.Compare(a.name, b.name), cmp.Compare(slices.Index(severity, a.reason), slices.Index(severity, b.reason)), strings.Compare(a.detail, b.detail))
	})
	var order []issue
	names := map[issue][]string{}
	for _, p := range unready {
		if _, seen := names[p.issue]; !seen {
			order = append(order, p.issue)
		}
		names[p.issue] = append(names[p.issue], p.name)
	}
	if len(order) == 0 {
		return "", nil
	}
	// The most severe issue first: it gives the reason, and the bound drops
	// the least useful lines.
	slices.SortStableFunc(order, func(a, b issue) int {
		return slices.Index(severity, a.reason) - slices.Index(severity, b.reason)
	})
	lines := make([]string, 0, min(len(order), maxPodIssues+1))
	for n, i := range order {
		if n == maxPodIssues {
			lines = append(lines, fmt.Sprintf("%d more pod issues", len(order)-maxPodIssues))
			break
		}
		lines = append(lines, podList(names[i])+": "+i.detail)
	}
	return order[0].reason, lines
}

// podList names pods: "pod a", "pods a, b", "pods a, b and 3 more".
func podList(names []string) string {
	if len(names) == 1 {
		return "pod " + names[0]
	}
	shown := strings.Join(names[:min(len(names), maxPodsNamed)], ", ")
	if more := len(names) - maxPodsNamed; more > 0 {
		return fmt.Sprintf("pods %s and %d more", shown, more)
	}
	return "pods " + shown
}

// join joins a Kubernetes reason and message, either of which may be empty.
func join(reason, message string) string {
	switch {
	case reason == "":
		return message
	case message == "":
		return reason
	}
	return reason + ": " + message
}

// clean makes a message one line without a final period (messages are joined
// into sentences) and at most maxDetailLength characters.
func clean(s string) string {
	s = strings.TrimRight(strings.Join(strings.Fields(s), " "), ".")
	if r := []rune(s); len(r) > maxDetailLength {
		s = string(r[:maxDetailLength-3]) + "..."
	}
	return s
}
