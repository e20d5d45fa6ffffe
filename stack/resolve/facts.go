package resolve

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/upstream"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// derive computes the facts of an engine (its Derived fields) once, when the
// stack is resolved: builders and checks read them, and nothing downstream
// computes them again. An engine's facts depend on its own configuration,
// its release and the stack's routing (kvAware), all resolved before.
func derive(s *Stack, e *Engine) {
	e.PodsPerReplica, e.MultiNode = multiNode(*e)
	e.Ray = rayBackend(*e)
	deriveParallelism(e)
	e.TensorParallel = tensorParallelSize(*e)
	e.LMCache = lmcacheOn(*e)
	e.KVAware = kvAware(s, *e)
	e.WorkerPort = workerPort(*e)
	if e.Cfg.Disaggregation != nil {
		e.Transfer = transferOf(*e)
	}
	e.RoutingSidecar = routingSidecarOn(*e)
	e.VLLMPort = vllmPort(*e)
	e.ScaleToZero = scaleToZero(*e)
	e.Autoscaled = autoscaled(*e)
	e.SleepMode = sleepMode(*e)
	e.V0Engine = usesV0Engine(*e)
	e.RuntimeAdapters = runtimeAdaptersOn(*e)
	e.LoRASidecar = loraSidecarOn(*e)
	e.KVOffload, e.KVOffloadFS = kvOffloadOf(*e)
	e.Shm = needsShm(*e)
	e.Drain = drainOf(*e)
	e.Prefetch = prefetchOn(*e)
	e.PrecisePrefix = PrecisePrefix(s)
}

// prefetchOn: storage.prefetch is on, on a model cache the stack can fill
// (validatePrefetch refuses the others).
func prefetchOn(e Engine) bool {
	p := e.Cfg.Storage.Prefetch
	return p != nil && (p.Enabled == nil || *p.Enabled) && Enabled(e.Cfg.Storage.Enabled)
}

// WeightsFrom says where an engine's weights come from, by the model's
// spec: the Hugging Face Hub (a repository ID, which vLLM downloads into
// HF_HOME), the pod's volumes (model.path, or an absolute modelURL) or
// another store vLLM reads itself (a URL such as s3://bucket/model: its
// object-storage loaders stream it and cache nothing in HF_HOME).
func WeightsFrom(e Engine) WeightsSource {
	ref := e.Model.ModelURL
	switch {
	case e.Model.Path != "" || strings.HasPrefix(ref, "/"):
		return WeightsLocal
	case strings.Contains(ref, "://"):
		return WeightsURL
	}
	return WeightsHub
}

// A WeightsSource is where an engine's weights come from (WeightsFrom).
type WeightsSource int

// The sources of WeightsFrom.
const (
	WeightsHub WeightsSource = iota
	WeightsLocal
	WeightsURL
)

// autoscaled reports whether an autoscaler owns a model's replicas. The
// Deployment's spec.replicas is then not sent: with server-side apply the
// stack would otherwise reset every scaling decision.
func autoscaled(e Engine) bool {
	a := e.Cfg.Autoscaling
	return a != nil && (a.Enabled == nil || *a.Enabled) || scaleToZero(e) != nil
}

// RouterAutoscaled reports whether an autoscaler owns the router's replicas.
func RouterAutoscaled(s *Stack) bool {
	a := s.Router.Autoscaling
	return a != nil && (a.Enabled == nil || *a.Enabled)
}

// CacheServerOn reports whether the stack runs an LMCache cache server.
func CacheServerOn(s *Stack) bool {
	c := s.CacheServer
	return c != nil && (c.Enabled == nil || *c.Enabled)
}

// DashboardOn reports whether the stack composes its Grafana dashboard.
func DashboardOn(s *Stack) bool {
	m := s.Spec.Monitoring
	return m != nil && On(m.Dashboard != nil, m.Dashboard.GetEnabled())
}

// AlertsOn reports whether the stack composes its PrometheusRule.
func AlertsOn(s *Stack) bool {
	m := s.Spec.Monitoring
	return m != nil && On(m.Alerts != nil, m.Alerts.GetEnabled())
}

// LMCachePDRole is the group's part as LMCache's NIXL backend and vLLM's
// kv_role name it.
func LMCachePDRole(e Engine) (nixlRole, kvRole string) {
	if e.Role == RoleDecode {
		return "receiver", "kv_consumer"
	}
	return "sender", "kv_producer"
}

// DecodeEngine is the stack's decode group's engine; validation allows one
// disaggregated model per stack.
func DecodeEngine(s *Stack) Engine {
	for _, e := range s.Engines {
		if e.Role == RoleDecode {
			return e
		}
	}
	return Engine{}
}

// routingSidecarOn reports whether an engine's pods run the routing
// sidecar: a decode group's behind the picker.
func routingSidecarOn(e Engine) bool { return e.Picked && e.Role == RoleDecode }

// vllmPort is where an engine's vLLM listens: behind the routing sidecar,
// DecodeEnginePort; else the engine port.
func vllmPort(e Engine) int32 {
	if routingSidecarOn(e) {
		return inferencepool.DecodeEnginePort
	}
	return names.EnginePort
}

// PoolModel is the engine that stands for e's model in the routing layer,
// and whether e is the one that does: a disaggregated model's prefill
// group, with the model's id and label (its decode group does not); any
// other engine itself.
func PoolModel(e Engine) (Engine, bool) {
	switch e.Role {
	case RoleDecode:
		return e, false
	case RolePrefill:
		e.ID, e.Label = e.ModelID, e.ModelLabel
	}
	return e, true
}

// PoolModels are the engines that stand for the stack's models.
func PoolModels(s *Stack) []Engine {
	out := make([]Engine, 0, len(s.Engines))
	for _, e := range s.Engines {
		if m, ok := PoolModel(e); ok {
			out = append(out, m)
		}
	}
	return out
}

// WantsPDB: a podDisruptionBudget block asks for one unless it says
// enabled: false.
func WantsPDB(p *v1alpha1.PodDisruptionBudget) bool {
	return p != nil && (p.Enabled == nil || *p.Enabled)
}

// On reports whether an optional block with an enabled switch asks for its
// object: set, and not enabled: false.
func On(set bool, enabled *bool) bool { return set && (enabled == nil || *enabled) }

// ExtensionOn reports whether the stack routes through the inference
// extension.
func ExtensionOn(s *Stack) bool { return s.Extension != nil }

// ModelPath is where a model is served through the gateway: /<model>, its
// DNS label.
func ModelPath(e Engine) string { return "/" + e.ID }

// lmcacheOn reports whether the engine runs LMCache.
func lmcacheOn(e Engine) bool { return Enabled(e.Cfg.LMCacheConfig.Enabled) }

// kvAware reports whether the engine takes part in kvaware routing: it then
// registers its LMCache worker with the LMCache controller in the router.
// Validation requires LMCache on every model with kvaware.
func kvAware(s *Stack, e Engine) bool {
	return s.Router.RouterType == RoutingKVAware && lmcacheOn(e)
}

// workerPort is the port of the engine's first LMCache worker.
func workerPort(e Engine) int32 {
	return ptr.Deref(e.Cfg.LMCacheConfig.WorkerPort, DefaultLMCacheWorkerPort)
}

// WorkerPorts is the range of ports the engine's LMCache workers listen on:
// workerPort and one more per further tensor-parallel worker. It is int64 so
// validation can see a range that runs past 65535.
func WorkerPorts(e Engine) (first, last int64) {
	first = int64(e.WorkerPort)
	return first, first + int64(e.TensorParallel) - 1
}

// tensorParallelSize is the number of GPU workers of one engine pod.
func tensorParallelSize(e Engine) int32 {
	if n := e.Cfg.VLLMConfig.TensorParallelSize; n != nil && *n > 1 {
		return *n
	}
	return 1
}

// loraSidecarOn: the sidecar downloads adapters onto the model cache, so it
// runs with LoRA and storage unless turned off.
func loraSidecarOn(e Engine) bool {
	sc := e.Cfg.LoRASidecar
	if sc != nil && sc.Enabled != nil {
		return e.Model.EnableLoRA && Enabled(e.Cfg.Storage.Enabled) && *sc.Enabled
	}
	// The adapter sync container downloads runtime adapters itself.
	return e.Model.EnableLoRA && Enabled(e.Cfg.Storage.Enabled) && !e.Model.EnableRuntimeAdapters
}

// MultiNodeSince is the first release with the mp backend's multi-node
// flags for certain (they were merged two days before 0.11.1 was cut).
// Before, a group runs Ray, as vLLM's LWS guide did up to 0.23.0: the
// leader starts a Ray head with the script vllm/vllm-openai images carry and
// waits for the group's pods to join, then runs `vllm serve` with the Ray
// backend; a worker joins the leader's Ray head (multinode.tsv).
var MultiNodeSince = upstream.V(0, 12, 0)

// rayBackend reports whether a multi-node engine runs Ray: its release has
// no multi-node flags of its own.
func rayBackend(e Engine) bool {
	_, ok := multiNode(e)
	return ok && e.VLLM.Version.Less(MultiNodeSince)
}

// multiNode is the number of pods per replica, and whether the model spans
// nodes.
func multiNode(e Engine) (int32, bool) {
	m := e.Cfg.MultiNode
	if m == nil || m.PodsPerReplica < 2 {
		return 0, false
	}
	return m.PodsPerReplica, true
}

// MultiNodeOn reports whether any model of the stack spans nodes.
func MultiNodeOn(s *Stack) bool {
	for _, e := range s.Engines {
		if e.MultiNode {
			return true
		}
	}
	return false
}

// EngineLMCache reads the engine image's LMCache: lmcache/vllm-openai
// images are tagged with their LMCache release (v0.3.9post2) or a date
// (2025-05-27-v1, latest); vllm/vllm-openai images have an unpinned LMCache
// from 0.9.2 and none before.
func EngineLMCache(e Engine) lmcacheInImage {
	v := e.Cfg.VLLMConfig
	image := ImageRef(v.ImagePullRegistry, v.Image)
	repo, tag := upstream.ImageTag(image)
	yes, no := true, false
	switch {
	case IsImageOf(repo, LMCacheImage):
		l := lmcacheInImage{Image: image, Has: &yes}
		if _, ok := upstream.ParseVersion(tag); ok {
			l.Release = strings.TrimPrefix(tag, "v")
		}
		return l
	case IsImageOf(repo, upstream.VLLMImageRepo):
		if e.VLLM.Version.Less(upstream.VLLMImageLMCacheFirst) {
			return lmcacheInImage{Image: image, Has: &no}
		}
		return lmcacheInImage{Image: image, Has: &yes}
	}
	return lmcacheInImage{Image: image}
}

// runtimeAdaptersOn: the engine runs the adapter sync container.
func runtimeAdaptersOn(e Engine) bool { return e.Model.EnableRuntimeAdapters }

// RuntimeAdaptersAny: some engine of the stack does.
func RuntimeAdaptersAny(s *Stack) bool {
	return slices.ContainsFunc(s.Engines, func(e Engine) bool { return e.RuntimeAdapters })
}

// scaleToZero is the model's scaleToZero block when enabled, else nil.
func scaleToZero(e Engine) *v1alpha1.ScaleToZero {
	z := e.Cfg.ScaleToZero
	if z == nil || !ptr.Deref(z.Enabled, true) {
		return nil
	}
	return z
}

// Sleep mode (vLLM's --enable-sleep-mode, in vllmConfig.extraArgs): the
// router sends no request to an engine it knows asleep, and it knows an
// engine can sleep only by the exact item --enable-sleep-mode in the
// command of the pod's container named vllm (router 0.1.6 on; before,
// never), never in its args (testdata/upstream/router-sleep-detection.tsv).

// SleepModeFlag is vLLM's flag, a store-true option: the only form.
const SleepModeFlag = "--enable-sleep-mode"

// sleepMode reports whether an engine can sleep: the user's extraArgs say so.
func sleepMode(e Engine) bool {
	return slices.Contains(e.Cfg.VLLMConfig.ExtraArgs, SleepModeFlag)
}

// StackSleepMode reports whether some engine of the stack can sleep, so
// the router labels sleeping engines (its Role's patch).
func StackSleepMode(s *Stack) bool {
	return slices.ContainsFunc(s.Engines, func(e Engine) bool { return e.SleepMode })
}

// ownsClaim reports whether the stack creates the model cache claim itself;
// with existingClaimName it mounts a claim it does not own, with emptyDir it
// needs none.
func ownsClaim(e Engine) bool {
	st := e.Cfg.Storage
	return Enabled(st.Enabled) && st.ExistingClaimName == "" && st.EmptyDir == nil
}

// sharedClaim reports whether the groups of a disaggregated model mount the
// model's own claim (S-M-storage-claim, key engine-M-storage) rather than
// one claim each: when the stack owns it and pods on several nodes may write
// it (ReadWriteMany). Turning disaggregation on or off then changes no
// claim, and the weights stay. A ReadWriteOnce claim cannot be shared by
// the groups' pods on other nodes (nor with the model's Deployment, which
// serves until the groups are ready), so each group keeps its own.
func sharedClaim(e Engine) bool {
	return e.Role != "" && ownsClaim(e) && slices.Contains(e.Cfg.Storage.AccessModes, corev1.ReadWriteMany)
}

// ClaimEngine is the engine whose names and labels the claim e mounts
// takes: the model's for a shared claim, else e.
func ClaimEngine(e Engine) Engine {
	if sharedClaim(e) {
		e.ID, e.Label, e.Role = e.ModelID, e.ModelLabel, ""
	}
	return e
}

// OwnsClaimKey reports whether e's objects include the claim it mounts: a
// shared claim is composed with the model's first group.
func OwnsClaimKey(e Engine) bool {
	return ownsClaim(e) && (!sharedClaim(e) || e.Role == RoleGroups[0])
}

// needsShm: NCCL exchanges tensors between tensor-parallel workers through
// /dev/shm, and so between the data-parallel ranks of an expert-parallel
// group; an explicit shmSize mounts it whatever the parallelism; vLLM's
// CPU offload tier lives there from 0.20.0.
func needsShm(e Engine) bool {
	tp := e.Cfg.VLLMConfig.TensorParallelSize
	return (tp != nil && *tp > 1) || e.DataParallel > 1 || e.Cfg.Storage.ShmSize != "" || KVOffloadInShm(e)
}

// usesV0Engine reports whether the stack asks for vLLM's V0 engine.
func usesV0Engine(e Engine) bool {
	v1 := e.Cfg.VLLMConfig.V1
	return v1 != nil && !*v1
}
