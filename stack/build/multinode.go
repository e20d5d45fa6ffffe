package build

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// EngineLeaderWorkerSet builds a multi-node model's LeaderWorkerSet. The
// leader's pod is the engine pod a Deployment would run; a worker's is the
// same pod with the worker's arguments, no API port or probes (it serves no
// HTTP: a group whose worker fails is recreated whole,
// RecreateGroupOnPodRestart) and the worker component, so only leaders are
// discovered and load balanced. Workers are created with the leader
// (LeaderCreated): the leader is Ready only once they joined.
func engineLeaderWorkerSet(s *resolve.Stack, e resolve.Engine) *lwsv1.LeaderWorkerSet {
	n := e.PodsPerReplica
	leader := engineTemplate(s, e)
	w := e
	w.LWSWorker = true
	worker := engineTemplate(s, w)
	c := &worker.Spec.Containers[0]
	c.Ports, c.StartupProbe, c.ReadinessProbe, c.LivenessProbe = nil, nil, nil, nil
	worker.Labels = withExtraLabels(engineWorkerLabels(s.Name, e), e.Cfg.Pod.Labels)
	return &lwsv1.LeaderWorkerSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: lwsv1.GroupVersion.String(), Kind: "LeaderWorkerSet"},
		ObjectMeta: s.Meta(s.Names.EngineLeaderWorkerSet(e.ID), EngineLabels(s.Name, e)),
		Spec: lwsv1.LeaderWorkerSetSpec{
			Replicas: ptr.To(*e.Cfg.Replicas),
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
				LeaderTemplate: &leader,
				WorkerTemplate: worker,
				Size:           ptr.To(n),
				RestartPolicy:  lwsv1.RecreateGroupOnPodRestart,
			},
			RolloutStrategy: LWSRollout(e),
			StartupPolicy:   lwsv1.LeaderCreatedStartupPolicy,
		},
	}
}

// LWSRollout replaces groups one at a time by default (LWS's own default:
// maxUnavailable 1, maxSurge 0), since a surge group needs a whole group's
// GPUs more; rollingUpdate's values apply as to a Deployment.
func LWSRollout(e resolve.Engine) lwsv1.RolloutStrategy {
	r := lwsv1.RolloutStrategy{Type: lwsv1.RollingUpdateStrategyType}
	if ru := e.Cfg.RollingUpdate; ru != nil && (ru.MaxSurge != nil || ru.MaxUnavailable != nil) {
		r.RollingUpdateConfiguration = &lwsv1.RollingUpdateConfiguration{
			MaxUnavailable: ptr.Deref(ru.MaxUnavailable, intstr.FromInt32(1)),
			MaxSurge:       ptr.Deref(ru.MaxSurge, intstr.FromInt32(0)),
		}
	}
	return r
}

// IntOrPercentText is an int or percent as the user wrote it: 1, "25%".
func IntOrPercentText(v intstr.IntOrString) string {
	if v.Type == intstr.String {
		return strconv.Quote(v.StrVal)
	}
	return v.String()
}
