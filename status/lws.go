package status

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
)

// A multi-node model's LeaderWorkerSet counts groups, not pods: a group is
// ready when its leader pod is Running and Ready and its workers are ready
// (LWS v0.7.0, multinode.tsv "group ready"); Available says every group is
// ready and updated. A LeaderWorkerSet has no observedGeneration: the
// Available condition's is the controller's last look.

func asLeaderWorkerSet(u *unstructured.Unstructured) (*lwsv1.LeaderWorkerSet, error) {
	l := &lwsv1.LeaderWorkerSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, l); err != nil {
		return nil, fmt.Errorf("cannot decode observed LeaderWorkerSet %q: %w", u.GetName(), err)
	}
	return l, nil
}

// wantGroups is spec.replicas; the API server defaults it to 1.
func wantGroups(l *lwsv1.LeaderWorkerSet) int32 {
	if l.Spec.Replicas == nil {
		return 1
	}
	return *l.Spec.Replicas
}

// availableOf is the LeaderWorkerSet's Available condition, if it is about
// the latest spec.
func availableOf(l *lwsv1.LeaderWorkerSet) *metav1.Condition {
	for i, c := range l.Status.Conditions {
		if c.Type == string(lwsv1.LeaderWorkerSetAvailable) {
			if c.ObservedGeneration != 0 && c.ObservedGeneration < l.Generation {
				return nil
			}
			return &l.Status.Conditions[i]
		}
	}
	return nil
}

// leaderWorkerSetReady: every group runs the latest spec and is ready, and
// the controller says Available. One scaled to 0 is ready once seen.
func leaderWorkerSetReady(l *lwsv1.LeaderWorkerSet) bool {
	want := wantGroups(l)
	if want == 0 {
		return true
	}
	c := availableOf(l)
	return l.Status.ReadyReplicas >= want && l.Status.UpdatedReplicas >= want && c != nil && c.Status == metav1.ConditionTrue
}

// leaderWorkerSetProgress reads an observed LeaderWorkerSet's group counts
// as a Deployment's replica counts (a group is a replica of the model) and
// says whether it is ready and, if not, why, from its conditions and then
// from the pods of its groups, leaders and workers.
func leaderWorkerSetProgress(o *unstructured.Unstructured, name string, pods Pods) (appsv1.DeploymentStatus, Progress) {
	if o == nil {
		return appsv1.DeploymentStatus{}, Progress{Reason: reasonCreating, Message: fmt.Sprintf("LeaderWorkerSet %s is not created yet", name)}
	}
	l, err := asLeaderWorkerSet(o)
	if err != nil {
		return appsv1.DeploymentStatus{}, Progress{Reason: reasonUnavailable, Message: clean(err.Error())}
	}
	st := appsv1.DeploymentStatus{
		Replicas: l.Status.Replicas, ReadyReplicas: l.Status.ReadyReplicas,
		AvailableReplicas: l.Status.ReadyReplicas, UpdatedReplicas: l.Status.UpdatedReplicas,
	}
	if leaderWorkerSetReady(l) {
		return st, Progress{Ready: true, Reason: reasonAvailable}
	}
	want := wantGroups(l)
	p := Progress{Reason: reasonUnavailable, Message: fmt.Sprintf("%d/%d groups ready", l.Status.ReadyReplicas, want)}
	switch c := availableOf(l); {
	case len(l.Status.Conditions) == 0:
		// Not even Progressing: the controller has not looked at it, or
		// the cluster has LeaderWorkerSet's CRD without its controller.
		p.Reason = reasonRollingOut
		p.Message += ", the LeaderWorkerSet controller has not reported on it yet"
	case l.Status.UpdatedReplicas < want:
		p.Reason = reasonRollingOut
		p.Message += fmt.Sprintf(", %d/%d updated to the latest spec", l.Status.UpdatedReplicas, want)
	case l.Status.ReadyReplicas >= want && c == nil:
		p.Message += ", the LeaderWorkerSet controller has not reported the latest spec Available yet"
	case l.Status.ReadyReplicas >= want && c.Status != metav1.ConditionTrue:
		p.Message += ", but the LeaderWorkerSet is not Available: " + clean(join(c.Reason, c.Message))
	}
	if reason, lines := podIssues(explaining(pods)); len(lines) > 0 {
		p.Reason = worst(p.Reason, reason)
		p.Message += "; " + strings.Join(lines, "; ")
	}
	return st, p
}
