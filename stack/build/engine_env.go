package build

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// cacheServerURL is what engines use as LMCACHE_REMOTE_URL.
func cacheServerURL(s *resolve.Stack) string {
	return "lm://" + s.Names.CacheServerService() + ":" + strconv.Itoa(names.ServicePort)
}

func transferEnv(s *resolve.Stack, e resolve.Engine) []corev1.EnvVar {
	switch {
	case e.Role == "":
		return nil
	case e.Transfer == resolve.TransferLMCache:
		return lmcachePDEnv(s, e)
	}
	return nixlEnv(e)
}

// nixlEnv: the side channel binds the pod's IP (its default, localhost,
// cannot be reached from the decode pod) on an explicit port; UCX_TLS only
// when the stack sets it (UCX reads it, not vLLM).
func nixlEnv(e resolve.Engine) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: "VLLM_NIXL_SIDE_CHANNEL_HOST", ValueFrom: PodIPEnv.ValueFrom},
		{Name: "VLLM_NIXL_SIDE_CHANNEL_PORT", Value: strconv.Itoa(names.NIXLSideChannelPort)},
	}
	if t := e.Cfg.Disaggregation.UCXTLS; t != "" {
		env = append(env, corev1.EnvVar{Name: "UCX_TLS", Value: t})
	}
	return env
}

// lmcachePDEnv configures LMCache under the mid-2025 names (LMCACHE_ + key),
// as the chart does with enablePD: no CPU buffer (the cache moves GPU to
// GPU), NIXL on with the group's role, the receiver's address (the decode
// Service for the sender; every interface for the receiver, which binds
// it), the chart's buffer on the GPU, and its garbage collection on.
func lmcachePDEnv(s *resolve.Stack, e resolve.Engine) []corev1.EnvVar {
	nixlRole, _ := resolve.LMCachePDRole(e)
	receiver := "0.0.0.0"
	if e.Role == resolve.RolePrefill {
		receiver = s.Names.EngineService(resolve.DecodeEngine(s).ID)
	}
	env := []corev1.EnvVar{
		{Name: "LMCACHE_USE_EXPERIMENTAL", Value: "True"},
		{Name: "LMCACHE_LOG_LEVEL", Value: "INFO"},
		{Name: "LMCACHE_LOCAL_CPU", Value: "False"},
		{Name: "LMCACHE_MAX_LOCAL_CPU_SIZE", Value: "0"},
		{Name: "LMCACHE_ENABLE_NIXL", Value: "True"},
		{Name: "LMCACHE_NIXL_ROLE", Value: nixlRole},
		{Name: "LMCACHE_NIXL_RECEIVER_HOST", Value: receiver},
		{Name: "LMCACHE_NIXL_RECEIVER_PORT", Value: strconv.Itoa(names.LMCacheReceiverPort)},
		{Name: "LMCACHE_NIXL_BUFFER_SIZE", Value: lmcacheNIXLBufferSize},
		{Name: "LMCACHE_NIXL_BUFFER_DEVICE", Value: "cuda"},
		{Name: "LMCACHE_NIXL_ENABLE_GC", Value: "True"},
	}
	if t := e.Cfg.Disaggregation.UCXTLS; t != "" {
		env = append(env, corev1.EnvVar{Name: "UCX_TLS", Value: t})
	}
	return env
}

// engineEnv computes the engine's environment, then applies the user's env:
// an entry named like a computed variable replaces it in place.
func engineEnv(s *resolve.Stack, e resolve.Engine) []corev1.EnvVar {
	v := e.Cfg.VLLMConfig
	// POD_IP comes first, as in the chart: Kubernetes expands $(POD_IP) only
	// in variables after it, such as a user's LMCACHE_P2P_HOST: $(POD_IP).
	env := append(make([]corev1.EnvVar, 0, 16), PodIPEnv)
	if resolve.Enabled(e.Cfg.Storage.Enabled) {
		env = append(env, corev1.EnvVar{Name: "HF_HOME", Value: ModelCachePath})
	}
	if e.Prefetch {
		// The fill Job downloaded the model: read the cache only
		// (local_files_only), never fetch again (prefetch.go).
		env = append(env, corev1.EnvVar{Name: "HF_HUB_OFFLINE", Value: "1"})
	}
	if t := v.HFTokenSecret; t != nil {
		env = append(env, secretEnv("HF_TOKEN", t))
	}
	if k := s.Router.APIKey; k != nil {
		env = append(env, secretEnv("VLLM_API_KEY", k))
	}
	if e.Model.EnableLoRA {
		env = append(env, corev1.EnvVar{Name: "VLLM_ALLOW_RUNTIME_LORA_UPDATING", Value: "True"})
	}
	env = append(env, useV1Env(e)...)
	env = append(env, lmcacheEnv(s, e)...)
	env = append(env, transferEnv(s, e)...)
	env = kvOffloadEnv(env, e)
	env = append(env, all2allEnv(e)...)
	return resolve.OverrideEnv(env, e.Cfg.Env)
}

// PodIPEnv is the pod's IP from the downward API.
var PodIPEnv = corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{
	FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"},
}}

// lmcacheRPCTimeout is the chart's VLLM_RPC_TIMEOUT with LMCache.
const lmcacheRPCTimeout = "1000000"

// lmcacheEnv configures LMCache. Buffer sizes are passed as numbers of GiB:
// LMCache parses LMCACHE_MAX_LOCAL_*_SIZE as a number and rejects "4Gi".
func lmcacheEnv(s *resolve.Stack, e resolve.Engine) []corev1.EnvVar {
	if !e.LMCache {
		return nil
	}
	l := e.Cfg.LMCacheConfig
	env := []corev1.EnvVar{
		{Name: "LMCACHE_USE_EXPERIMENTAL", Value: "True"},
	}
	if e.V0Engine {
		// The V0 engine's RPC timeout in milliseconds (default 10000),
		// raised as the chart raises it with LMCache. Only the V0 engine's
		// multiprocessing client reads it; the V1 engine never did, and
		// vLLM dropped the variable in June 2026 (PR #44128), after which
		// it is an unknown variable.
		env = append(env, corev1.EnvVar{Name: "VLLM_RPC_TIMEOUT", Value: lmcacheRPCTimeout})
	}
	env = append(env, corev1.EnvVar{Name: "LMCACHE_LOG_LEVEL", Value: "INFO"})
	if l.CPUOffloadingBufferSize != "" {
		env = append(env,
			corev1.EnvVar{Name: "LMCACHE_LOCAL_CPU", Value: "True"},
			corev1.EnvVar{Name: "LMCACHE_MAX_LOCAL_CPU_SIZE", Value: GibString(l.CPUOffloadingBufferSize)})
	}
	if l.DiskOffloadingBufferSize != "" {
		env = append(env,
			corev1.EnvVar{Name: "LMCACHE_LOCAL_DISK", Value: lmcacheDiskURL},
			corev1.EnvVar{Name: "LMCACHE_MAX_LOCAL_DISK_SIZE", Value: GibString(l.DiskOffloadingBufferSize)})
	}
	url, serde := l.RemoteURL, l.RemoteSerde
	if url == "" && resolve.CacheServerOn(s) {
		// The stack's own cache server, unless the engine names another.
		url, serde = cacheServerURL(s), resolve.Or(serde, resolve.Or(s.CacheServer.Serde, resolve.DefaultCacheServerSerde))
	}
	if url != "" {
		env = append(env, corev1.EnvVar{Name: "LMCACHE_REMOTE_URL", Value: url})
	}
	if serde != "" {
		env = append(env, corev1.EnvVar{Name: "LMCACHE_REMOTE_SERDE", Value: serde})
	}
	return append(env, lmcacheControllerEnv(s, e)...)
}

// lmcacheControllerEnv connects the engine's LMCache to the controller that
// the router runs for kvaware routing. The names are LMCache's configuration
// keys as environment variables (LMCACHE_ + key), as current LMCache reads
// them: it requires the instance id, both controller URLs and the worker
// ports once the controller is enabled, and drops the older names
// controller_url and lmcache_worker_port as unknown keys. kvaware needs a
// router of 0.1.11 or later (the reply port), whose LMCache (0.3.11) reads
// these names too.
//
// The instance id is the pod's name: the router maps an instance to an
// engine by the pod IP it registered from, so every pod needs its own id.
// Each tensor-parallel worker of a pod listens on its own port. Workers send
// a heartbeat every workerHeartbeatTime seconds; the controller drops a
// worker it has not heard from in 30 seconds (--lmcache-worker-timeout).
func lmcacheControllerEnv(s *resolve.Stack, e resolve.Engine) []corev1.EnvVar {
	if !e.KVAware {
		return nil
	}
	first, last := resolve.WorkerPorts(e)
	ports := make([]string, 0, last-first+1)
	for p := first; p <= last; p++ {
		ports = append(ports, strconv.FormatInt(p, 10))
	}
	heartbeat := ptr.Deref(e.Cfg.LMCacheConfig.WorkerHeartbeatTime, resolve.DefaultLMCacheWorkerHeartbeatTime)
	return []corev1.EnvVar{
		hashSeedEnv,
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "LMCACHE_ENABLE_CONTROLLER", Value: "True"},
		{Name: "LMCACHE_LMCACHE_INSTANCE_ID", Value: "$(POD_NAME)"},
		{Name: "LMCACHE_CONTROLLER_PULL_URL", Value: controllerURL(s, s.Router.ControllerPort)},
		{Name: "LMCACHE_CONTROLLER_REPLY_URL", Value: controllerURL(s, s.Router.ReplyPort)},
		{Name: "LMCACHE_LMCACHE_WORKER_PORTS", Value: strings.Join(ports, ",")},
		{Name: "LMCACHE_LMCACHE_WORKER_HEARTBEAT_TIME", Value: strconv.Itoa(int(heartbeat))},
	}
}

// hashSeedEnv fixes Python's hash seed. LMCache names KV cache chunks by
// hashes seeded from PYTHONHASHSEED (random when unset, per process); the
// router hashes a request's tokens to look them up, so with kvaware routing
// the engines and the router need the same seed, or no lookup ever hits.
var hashSeedEnv = corev1.EnvVar{Name: "PYTHONHASHSEED", Value: "0"}

// GibString formats a validated buffer size as a decimal number of GiB,
// e.g. "4" for 4Gi and "0.5" for 512Mi.
func GibString(v string) string {
	g, _ := resolve.Gibibytes(v)
	return strconv.FormatFloat(g, 'f', -1, 64)
}

// controllerURL is where engines find a port of the LMCache controller:
// host:port, the form LMCache's ZeroMQ sockets take.
func controllerURL(s *resolve.Stack, port int32) string {
	return s.Names.RouterService() + ":" + strconv.Itoa(int(port))
}

// useV1Env is VLLM_USE_V1 where the engine's vLLM reads it; from 0.11.1 it
// does not, and validation warns that vllmConfig.v1 has no effect.
func useV1Env(e resolve.Engine) []corev1.EnvVar {
	v1 := e.Cfg.VLLMConfig.V1
	if v1 == nil || e.VLLM.Version.AtLeast(upstream.VLLMUseV1Ignored) {
		return nil
	}
	return []corev1.EnvVar{{Name: "VLLM_USE_V1", Value: boolDigit(*v1)}}
}
