package stack

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// A multi-node model (multiNode) is a LeaderWorkerSet (kubernetes-sigs/lws
// v0.7.0) instead of a Deployment: each replica is a group of
// podsPerReplica pods, a leader that serves the API and workers that join
// it, running one engine with vLLM's multi-node (mp) backend: every pod runs
// `vllm serve` with --nnodes, its --node-rank and the leader's address as
// --master-addr; the workers are --headless (before vLLM 0.12.0, Ray: see
// multiNodeSince). The LWS pod webhook gives every container
// LWS_LEADER_ADDRESS (the leader pod's DNS name), LWS_WORKER_INDEX and
// LWS_GROUP_SIZE, which the kubelet expands in the arguments. Facts:
// testdata/upstream/multinode.tsv and DISAGG-MULTINODE.md §3.

// ComponentEngineWorker is the component of a multi-node model's worker
// pods: the router, the engine Service and the engines' NetworkPolicy rule
// for the router select the leaders (ComponentEngine) only, since workers
// serve no HTTP.
const ComponentEngineWorker = "serving-engine-worker"

// The LWS webhook's variables in the pods' containers.
const (
	lwsLeaderAddress = "$(" + lwsv1.LwsLeaderAddress + ")"
	lwsWorkerIndex   = "$(" + lwsv1.LwsWorkerIndex + ")"
)

// multiNodeSince is the first release with the mp backend's multi-node
// flags for certain (they were merged two days before 0.11.1 was cut).
// Before, a group runs Ray, as vLLM's LWS guide did up to 0.23.0: the
// leader starts a Ray head with the script vllm/vllm-openai images carry and
// waits for the group's pods to join, then runs `vllm serve` with the Ray
// backend; a worker joins the leader's Ray head (multinode.tsv).
var multiNodeSince = upstream.V(0, 12, 0)

// rayScript is vLLM's multi-node-serving.sh in its own images up to 0.20.0
// (Ray is used before 0.12.0 only).
const rayScript = "/vllm-workspace/examples/online_serving/multi-node-serving.sh"

// rayLeaderScript starts the Ray head, waits for the group, then runs the
// engine: the arguments of `sh -c` after the script are `vllm serve …`,
// which it runs as they are ("$0" "$@"), so no value of the stack is ever
// read by the shell.
const rayLeaderScript = `bash ` + rayScript + ` leader --ray_cluster_size="$` + lwsv1.LwsGroupSize + `" && exec "$0" "$@"`

// rayBackend reports whether a multi-node engine runs Ray: its release has
// no multi-node flags of its own.
func rayBackend(e engine) bool {
	_, ok := multiNode(e)
	return ok && e.vllm.version.Less(multiNodeSince)
}

// multiNodeCommand is the command and arguments of an engine's container:
// serve and args as they are, but for a multi-node group on Ray, where the
// leader's wrap `vllm serve` (serve then args as the arguments of sh -c)
// and a worker's join the leader's Ray head.
func multiNodeCommand(e engine, serve []string, args []string) (command, rest []string) {
	if !rayBackend(e) {
		return serve, args
	}
	if e.lwsWorker {
		return []string{"bash", rayScript, "worker", "--ray_address=" + lwsLeaderAddress}, nil
	}
	return []string{"sh", "-c", rayLeaderScript}, append(slices.Clone(serve), args...)
}

// multiNode is the number of pods per replica, and whether the model spans
// nodes.
func multiNode(e engine) (int32, bool) {
	m := e.cfg.MultiNode
	if m == nil || m.PodsPerReplica < 2 {
		return 0, false
	}
	return m.PodsPerReplica, true
}

// multiNodeArgs place an engine pod in its group: the leader is node rank
// 0, a worker its LWS worker index, headless (no API server).
func multiNodeArgs(e engine) []string {
	n, ok := multiNode(e)
	if !ok {
		return nil
	}
	if rayBackend(e) {
		return []string{"--distributed-executor-backend", "ray"}
	}
	rank := "0"
	if e.lwsWorker {
		rank = lwsWorkerIndex
	}
	args := []string{opt("--nnodes", itoa(n)), "--node-rank", rank, "--master-addr", lwsLeaderAddress}
	if e.lwsWorker {
		args = append(args, "--headless")
	}
	return args
}

// engineLeaderWorkerSet builds a multi-node model's LeaderWorkerSet. The
// leader's pod is the engine pod a Deployment would run; a worker's is the
// same pod with the worker's arguments, no API port or probes (it serves no
// HTTP: a group whose worker fails is recreated whole,
// RecreateGroupOnPodRestart) and the worker component, so only leaders are
// discovered and load balanced. Workers are created with the leader
// (LeaderCreated): the leader is Ready only once they joined.
func engineLeaderWorkerSet(s *resolvedStack, e engine) *lwsv1.LeaderWorkerSet {
	n, _ := multiNode(e)
	leader := engineTemplate(s, e)
	w := e
	w.lwsWorker = true
	worker := engineTemplate(s, w)
	c := &worker.Spec.Containers[0]
	c.Ports, c.StartupProbe, c.ReadinessProbe, c.LivenessProbe = nil, nil, nil, nil
	worker.Labels = withExtraLabels(engineWorkerLabels(s.name, e), e.cfg.Pod.Labels)
	return &lwsv1.LeaderWorkerSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: lwsv1.GroupVersion.String(), Kind: "LeaderWorkerSet"},
		ObjectMeta: s.meta(s.names.engineLeaderWorkerSet(e.id), engineLabels(s.name, e)),
		Spec: lwsv1.LeaderWorkerSetSpec{
			Replicas: ptr.To(*e.cfg.Replicas),
			LeaderWorkerTemplate: lwsv1.LeaderWorkerTemplate{
				LeaderTemplate: &leader,
				WorkerTemplate: worker,
				Size:           ptr.To(n),
				RestartPolicy:  lwsv1.RecreateGroupOnPodRestart,
			},
			RolloutStrategy: lwsRollout(e),
			StartupPolicy:   lwsv1.LeaderCreatedStartupPolicy,
		},
	}
}

// lwsRollout replaces groups one at a time by default (LWS's own default:
// maxUnavailable 1, maxSurge 0), since a surge group needs a whole group's
// GPUs more; rollingUpdate's values apply as to a Deployment.
func lwsRollout(e engine) lwsv1.RolloutStrategy {
	r := lwsv1.RolloutStrategy{Type: lwsv1.RollingUpdateStrategyType}
	if ru := e.cfg.RollingUpdate; ru != nil && (ru.MaxSurge != nil || ru.MaxUnavailable != nil) {
		r.RollingUpdateConfiguration = &lwsv1.RollingUpdateConfiguration{
			MaxUnavailable: ptr.Deref(ru.MaxUnavailable, intstr.FromInt32(1)),
			MaxSurge:       ptr.Deref(ru.MaxSurge, intstr.FromInt32(0)),
		}
	}
	return r
}

// intOrPercentText is an int or percent as the user wrote it: 1, "25%".
func intOrPercentText(v intstr.IntOrString) string {
	if v.Type == intstr.String {
		return strconv.Quote(v.StrVal)
	}
	return v.String()
}

// engineWorkerLabels are the labels of a multi-node model's worker pods:
// the engine's, with the worker component and without the router's model
// label.
func engineWorkerLabels(stack string, e engine) map[string]string {
	l := engineLabels(stack, e)
	l[LabelComponent] = ComponentEngineWorker
	delete(l, labelModel)
	return l
}

// multiNodeOn reports whether any model of the stack spans nodes.
func multiNodeOn(s *resolvedStack) bool {
	for _, e := range s.engines {
		if _, ok := multiNode(e); ok {
			return true
		}
	}
	return false
}

// validateMultiNode refuses a multi-node model that vLLM or LWS could not
// run as asked, and what the stack does not offer on LWS yet, naming the
// field and the arithmetic.
func validateMultiNode(f *Findings, e engine) {
	n, ok := multiNode(e)
	if !ok {
		return
	}
	c, p := e.cfg, e.block+".multiNode"
	if image := imageRef(c.VLLMConfig.ImagePullRegistry, c.VLLMConfig.Image); e.vllmErr == nil && rayBackend(e) && !isImageOf(imageRepo(image), upstream.VLLMImageRepo) {
		f.errorf("%s: vLLM %s has no multi-node backend of its own (its flags came with %s), so the group runs Ray with the script vLLM's own images carry (%s), and the engine's image is %s: use vllm/vllm-openai:v%s, or vLLM %s or later", p, e.vllm, multiNodeSince, rayScript, image, e.vllm.version, multiNodeSince)
	}
	tp, pp := ptr.Deref(c.VLLMConfig.TensorParallelSize, 1), ptr.Deref(c.VLLMConfig.PipelineParallelSize, 1)
	if g, err := gpus(c.Resources.GPU); err == nil && g*int64(n) != int64(tp)*int64(pp) {
		ranks := int64(tp) * int64(pp)
		fix := fmt.Sprintf("make the two products equal, e.g. tensorParallelSize %d and pipelineParallelSize %d", g, n)
		switch {
		case g == 0 && ranks%int64(n) == 0:
			fix = fmt.Sprintf("set resources.gpu to %d, the GPUs of each pod", ranks/int64(n))
		case g == 0:
			fix = fmt.Sprintf("set resources.gpu to %d and pipelineParallelSize to %d, one stage per pod", tp, n)
		}
		f.errorf("%s: resources.gpu %d × podsPerReplica %d = %d GPUs per replica, and vllmConfig.tensorParallelSize %d × pipelineParallelSize %d = %d ranks: each GPU of a replica runs one rank; %s",
			p, g, n, g*int64(n), tp, pp, ranks, fix)
	}
	refuse := func(what, why string) { f.errorf("%s: %s cannot be combined with multiNode yet: %s", p, what, why) }
	switch {
	case disaggregated(c):
		refuse("disaggregation", "a disaggregated group on several nodes needs a NIXL side channel per rank (DISAGG-MULTINODE.md, open question 3)")
	case autoscaled(e):
		refuse("autoscaling", "the autoscalers scale a Deployment; set replicas")
	case lmcacheOn(e):
		refuse("lmcacheConfig.enabled", "LMCache's workers per rank across nodes are not established")
	case loraSidecarOn(e):
		refuse("loraSidecar", "the sidecar loads adapters into one pod's engine, and a replica has several")
	case wantsPDB(c.PodDisruptionBudget):
		refuse("podDisruptionBudget", "it would count pods, and evicting any pod of a group restarts the whole group")
	}
	if c.DeploymentStrategy == "Recreate" {
		f.errorf("%s: deploymentStrategy Recreate: a LeaderWorkerSet only rolls groups over (rollingUpdate: maxUnavailable, maxSurge); remove deploymentStrategy", p)
	}
	if enabled(c.Storage.Enabled) && onlyReadWriteOnce(c.Storage) {
		f.errorf("%s: storage is ReadWriteOnce, and a replica's pods run on different nodes, which cannot all mount it: use accessModes [ReadWriteMany], an existing claim every node can mount, or storage.enabled false", p)
	}
	replicas := ptr.Deref(c.Replicas, DefaultReplicas)
	if pods := int64(replicas) * int64(n); pods > math.MaxInt32 {
		f.errorf("%s.replicas %d × multiNode.podsPerReplica %d = %d pods, and a LeaderWorkerSet takes at most %d (its webhook refuses more): lower replicas to at most %d",
			e.block, replicas, n, pods, math.MaxInt32, math.MaxInt32/n)
	}
	validateMultiNodeRollout(f, e, replicas)
}

// validateMultiNodeRollout refuses the rollout LWS v0.7.0's webhook refuses
// (pkg/webhooks/leaderworkerset_webhook.go, generalValidate): maxUnavailable
// scaled against replicas rounding down, maxSurge rounding up, both 0 while
// replicas is not. rollingUpdate's values are a Deployment's, but a
// LeaderWorkerSet's maxSurge is 0 when only maxUnavailable is set (lwsRollout)
// where a Deployment's is 1, so `maxUnavailable: 0` alone, fine on a
// Deployment, stops a LeaderWorkerSet's rollout.
func validateMultiNodeRollout(f *Findings, e engine, replicas int32) {
	ru, r := e.cfg.RollingUpdate, lwsRollout(e).RollingUpdateConfiguration
	if r == nil || replicas == 0 || isZero(ru.MaxSurge) && isZero(ru.MaxUnavailable) { // both 0: validatePod refuses it
		return
	}
	unavailable, err1 := intstr.GetScaledValueFromIntOrPercent(&r.MaxUnavailable, int(replicas), false)
	surge, err2 := intstr.GetScaledValueFromIntOrPercent(&r.MaxSurge, int(replicas), true)
	if err1 != nil || err2 != nil || unavailable != 0 || surge != 0 { // a value that is no number: intOrPercent refuses it
		return
	}
	u, fix := "maxUnavailable "+intOrPercentText(r.MaxUnavailable), "maxUnavailable to 1"
	if r.MaxUnavailable.Type == intstr.String {
		if !isZero(&r.MaxUnavailable) {
			u += fmt.Sprintf(" of replicas %d is 0 groups (rounded down)", replicas)
		}
		fix += fmt.Sprintf(" (or \"%d%%\")", (100+int64(replicas)-1)/int64(replicas))
	}
	s := "maxSurge " + intOrPercentText(r.MaxSurge)
	if ru.MaxSurge == nil {
		s = "maxSurge unset, which is 0 on a LeaderWorkerSet (1 on a Deployment)"
	}
	f.errorf("%s.rollingUpdate: %s and %s: a multi-node model's LeaderWorkerSet could never replace a group, and LWS's webhook refuses it; set %s, or maxSurge to 1 (a surge group needs a whole group's GPUs more)",
		e.block, u, s, fix)
}
