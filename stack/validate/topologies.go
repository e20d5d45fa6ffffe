package validate

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/internal/kubeapi"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

var (
	routerDisaggregatedAt = upstream.V(0, 1, 11)
)

// validateDisaggregation refuses a disaggregated model the programs could not
// serve as asked, naming the release or setting that stands in the way.
func validateDisaggregation(f *Findings, spec *v1alpha1.ProductionStackSpec, s *resolve.Stack) {
	var groups []resolve.Engine
	for _, e := range s.Engines {
		if e.Role != "" {
			groups = append(groups, e)
		}
	}
	if len(groups) == 0 {
		return
	}
	e := groups[0] // the model's own settings are those of both groups
	p := e.Block + ".disaggregation"
	transfer := e.Transfer
	routing := resolve.RoutingFor(transfer)
	if len(s.Engines) > len(groups) || len(groups) > len(resolve.RoleGroups) {
		if resolve.ExtensionOn(s) {
			f.errorf("%s: a stack with a disaggregated model serves that model alone: its InferencePool selects the stack's serving pods, both groups'; serve the other models from stacks of their own", p)
		} else {
			f.errorf("%s: a stack with a disaggregated model serves that model alone: the router's routing logic (%s) applies to every model; serve the other models from stacks of their own", p, routing)
		}
	}
	switch transfer {
	case resolve.TransferNIXL:
		if e.VLLMErr == nil && e.VLLM.Version.Less(resolve.NIXLSince) {
			f.errorf("%s.transfer nixl needs vLLM %s or later, the first vllm/vllm-openai image with NIXL, and the engine runs vLLM %s: use a newer image", p, resolve.NIXLSince, e.VLLM)
		}
	case resolve.TransferLMCache:
		validateLMCacheTransfer(f, s, groups)
	default:
		f.errorf("%s.transfer %q is not supported: use nixl or lmcache", p, transfer)
	}
	if e.LMCache {
		f.errorf("%s: lmcacheConfig.enabled and disaggregation both set the engines' --kv-transfer-config: turn LMCache off for a disaggregated model (transfer lmcache configures the LMCache it needs)", p)
	}
	validateGroupScaling(f, s, p, groups)
	warnIdleGroup(f, groups)
	if resolve.Enabled(e.Cfg.Disaggregation.HostPIDAndIPC) && e.Cfg.Pod != nil {
		apiProblems(f, e.Block+".pod.securityContext", kubeapi.HostIPCSysctls(e.Cfg.Pod.SecurityContext))
	}
	if resolve.ExtensionOn(s) {
		return // the picker routes it: validatePickerPD
	}
	r := s.Router
	if resolve.RouterTypeChosen(spec.RouterConfig) {
		f.errorf("spec.routerConfig.routerType %s cannot route a disaggregated model: remove routerType, the router then uses %s", spec.RouterConfig.RouterType, routing)
	}
	switch {
	case r.DiscoveryType != resolve.DiscoveryServiceName:
	case transfer == resolve.TransferNIXL:
		f.errorf("spec.routerConfig.k8sServiceDiscoveryType %s cannot route a disaggregated model: the decode engine pulls the KV cache from the host the router names, which must be the prefill pod, not its Service; use pod-ip", resolve.DiscoveryServiceName)
	default:
		f.errorf("spec.routerConfig.k8sServiceDiscoveryType %s cannot route a disaggregated model: the router tells the groups apart by the label model, which it reads from a Service's selector there, and the stack's Services select pods by their name labels; use pod-ip", resolve.DiscoveryServiceName)
	}
	if transfer == resolve.TransferNIXL && r.VersionErr == nil && r.Version.Version.Less(routerDisaggregatedAt) {
		f.errorf("%s needs router %s or later, the first with --routing-logic %s, and the router is %s: use a newer router image", p, routerDisaggregatedAt, resolve.RoutingDisaggregated, r.Version)
	}
}

// warnIdleGroup: every request of a disaggregated model goes through both
// groups, so with one at 0 replicas and the other not the model answers
// none, while the other group holds its GPUs.
func warnIdleGroup(f *Findings, groups []resolve.Engine) {
	for _, g := range groups {
		if *g.Cfg.Replicas != 0 {
			continue
		}
		for _, o := range groups {
			if n := *o.Cfg.Replicas; n > 0 {
				f.warnf("%s 0 and %s %d: every request of a disaggregated model goes through both groups, so the model answers none while the %s group holds its GPUs; set both to 0 to stop the model, or both above 0", g.Origin("replicas"), o.Origin("replicas"), n, o.Role)
				return
			}
		}
	}
}

// validatePickerPD refuses a disaggregated model the picker or its sidecar
// cannot serve, naming the release or setting in the way; e is the
// model's prefill group.
func validatePickerPD(f *Findings, s *resolve.Stack, e resolve.Engine) {
	x := s.Extension
	const p = "spec.inferenceExtension"
	if x.ReleaseErr == nil && !upstream.PickerPD(x.Release) {
		why := "the inference extension's own picker has no prefill and decode plugins (epp-plugins.tsv)"
		if x.Release.Kind == upstream.PickerLLMD {
			why = fmt.Sprintf("%s has only the pd-profile-handler and its sidecar the --connector flag, whose configuration the function does not render", x.Release)
		}
		f.errorf("%s: %s.disaggregation needs the picker to schedule prefill and decode itself, and the picker is %s (%s): %s; use llm-d's picker %s or later (%s), or route the model through the production-stack router (remove inferenceExtension)",
			p, e.Block, x.Release, x.From, why, upstream.PickerPDSince, upstream.LLMDPickerImage)
		return
	}
	if t := e.Transfer; t == resolve.TransferLMCache {
		f.errorf("%s.disaggregation.transfer lmcache cannot go behind the endpoint picker: llm-d's routing sidecar moves the KV cache by nixlv2, shared-storage, sglang, mooncake or offloading, none of them LMCache's push from the prefill engine to the decode group's receiver; use transfer nixl, or route the model through the production-stack router (remove inferenceExtension)", e.Block)
	}
	if ok := e.MultiNode; ok {
		f.errorf("%s: a multi-node disaggregated model behind the endpoint picker needs the routing sidecar on its decode leaders, which the stack does not render yet: serve each group on one node, or route the model through the production-stack router (remove inferenceExtension)", e.Block)
	}
	sc := x.Sidecar
	switch newest := upstream.PickerNewest[upstream.PickerLLMD]; {
	case sc.Err != nil:
		f.errorf("%s.%s", p, sc.Err)
	case newest.Less(sc.Release):
		f.warnf("%s.routingSidecar: the sidecar of llm-d %s (%s) is newer than %s, the newest release this function knows: its flags are rendered as for %s", p, sc.Release, sc.From, newest, newest)
	}
}

// validateMultiNode refuses a multi-node model that vLLM or LWS could not
// run as asked, and what the stack does not offer on LWS yet, naming the
// field and the arithmetic.
func validateMultiNode(f *Findings, e resolve.Engine) {
	n, ok := e.PodsPerReplica, e.MultiNode
	if !ok {
		return
	}
	c, p := e.Cfg, e.Block+".multiNode"
	if image := resolve.ImageRef(c.VLLMConfig.ImagePullRegistry, c.VLLMConfig.Image); e.VLLMErr == nil && e.Ray && !resolve.IsImageOf(resolve.ImageRepo(image), upstream.VLLMImageRepo) {
		f.errorf("%s: vLLM %s has no multi-node backend of its own (its flags came with %s), so the group runs Ray with the script vLLM's own images carry (%s), and the engine's image is %s: use vllm/vllm-openai:v%s, or vLLM %s or later", p, e.VLLM, resolve.MultiNodeSince, build.RayScript, image, e.VLLM.Version, resolve.MultiNodeSince)
	}
	tp, pp := ptr.Deref(c.VLLMConfig.TensorParallelSize, 1), ptr.Deref(c.VLLMConfig.PipelineParallelSize, 1)
	if g, err := resolve.GPUs(c.Resources.GPU); err == nil && e.DataParallel < 2 && g*int64(n) != int64(tp)*int64(pp) { // with ranks: validateDataParallelGPUs
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
	case resolve.Disaggregated(c):
		refuse("disaggregation", "a disaggregated group on several nodes needs a NIXL side channel per rank (DISAGG-MULTINODE.md, open question 3)")
	case e.Autoscaled:
		refuse("autoscaling", "the autoscalers scale a Deployment; set replicas")
	case e.LMCache:
		refuse("lmcacheConfig.enabled", "LMCache's workers per rank across nodes are not established")
	case e.LoRASidecar:
		refuse("loraSidecar", "the sidecar loads adapters into one pod's engine, and a replica has several")
	case resolve.WantsPDB(c.PodDisruptionBudget):
		refuse("podDisruptionBudget", "it would count pods, and evicting any pod of a group restarts the whole group")
	}
	if c.DeploymentStrategy == "Recreate" {
		f.errorf("%s: deploymentStrategy Recreate: a LeaderWorkerSet only rolls groups over (rollingUpdate: maxUnavailable, maxSurge); remove deploymentStrategy", p)
	}
	if resolve.Enabled(c.Storage.Enabled) && onlyReadWriteOnce(c.Storage) {
		f.errorf("%s: storage is ReadWriteOnce, and a replica's pods run on different nodes, which cannot all mount it: use accessModes [ReadWriteMany], an existing claim every node can mount, or storage.enabled false", p)
	}
	replicas := ptr.Deref(c.Replicas, resolve.DefaultReplicas)
	if pods := int64(replicas) * int64(n); pods > math.MaxInt32 {
		f.errorf("%s.replicas %d × multiNode.podsPerReplica %d = %d pods, and a LeaderWorkerSet takes at most %d (its webhook refuses more): lower replicas to at most %d",
			e.Block, replicas, n, pods, math.MaxInt32, math.MaxInt32/n)
	}
	validateMultiNodeRollout(f, e, replicas)
}

// validateMultiNodeRollout refuses the rollout LWS v0.7.0's webhook refuses
// (pkg/webhooks/leaderworkerset_webhook.go, generalValidate): maxUnavailable
// scaled against replicas rounding down, maxSurge rounding up, both 0 while
// replicas is not. rollingUpdate's values are a Deployment's, but a
// LeaderWorkerSet's maxSurge is 0 when only maxUnavailable is set (LWSRollout)
// where a Deployment's is 1, so `maxUnavailable: 0` alone, fine on a
// Deployment, stops a LeaderWorkerSet's rollout.
func validateMultiNodeRollout(f *Findings, e resolve.Engine, replicas int32) {
	ru, r := e.Cfg.RollingUpdate, build.LWSRollout(e).RollingUpdateConfiguration
	if r == nil || replicas == 0 || isZero(ru.MaxSurge) && isZero(ru.MaxUnavailable) { // both 0: validatePod refuses it
		return
	}
	unavailable, err1 := intstr.GetScaledValueFromIntOrPercent(&r.MaxUnavailable, int(replicas), false)
	surge, err2 := intstr.GetScaledValueFromIntOrPercent(&r.MaxSurge, int(replicas), true)
	if err1 != nil || err2 != nil || unavailable != 0 || surge != 0 { // a value that is no number: intOrPercent refuses it
		return
	}
	u, fix := "maxUnavailable "+build.IntOrPercentText(r.MaxUnavailable), "maxUnavailable to 1"
	if r.MaxUnavailable.Type == intstr.String {
		if !isZero(&r.MaxUnavailable) {
			u += fmt.Sprintf(" of replicas %d is 0 groups (rounded down)", replicas)
		}
		fix += fmt.Sprintf(" (or \"%d%%\")", (100+int64(replicas)-1)/int64(replicas))
	}
	s := "maxSurge " + build.IntOrPercentText(r.MaxSurge)
	if ru.MaxSurge == nil {
		s = "maxSurge unset, which is 0 on a LeaderWorkerSet (1 on a Deployment)"
	}
	f.errorf("%s.rollingUpdate: %s and %s: a multi-node model's LeaderWorkerSet could never replace a group, and LWS's webhook refuses it; set %s, or maxSurge to 1 (a surge group needs a whole group's GPUs more)",
		e.Block, u, s, fix)
}
