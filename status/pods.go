package status

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/internal/text"
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

// explaining are the pods that explain a Deployment, sorted by name. Pods
// that are going away (terminating, or completed) say nothing about the
// stack.
func explaining(pods Pods) []corev1.Pod {
	if pods == nil {
		return nil
	}
	var out []corev1.Pod
	for _, p := range pods() {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded {
			continue
		}
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
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
			return issue{reasonUnschedulable, clean("unschedulable: " + cmp.Or(c.Message, c.Reason))}, true
		}
	}
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if i, ok := containerIssue(cs); ok {
			return i, true
		}
	}
	return issue{reasonPodPending, "not ready yet: " + cmp.Or(string(p.Status.Phase), "Pending")}, true
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
		return issue{reasonCrashLoopBackOff, clean(fmt.Sprintf("%s terminated: %s (exit code %d)", c, cmp.Or(t.Reason, "Error"), t.ExitCode) + memoryHint(t.Reason))}, true
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
	return fmt.Sprintf(", last exit: %s (exit code %d)", cmp.Or(t.Reason, "Error"), t.ExitCode) + memoryHint(t.Reason)
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
			unready = append(unready, named{text.Clip(p.Name, maxPodNameLength), i})
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
