package stack

import (
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

const (
	lmcacheDiskPath   = modelCachePath + "/lmcache"
	lmcacheDiskURL    = "file://" + lmcacheDiskPath + "/"
	volumeLMCacheDisk = "lmcache-disk"
	// lmcacheWorkerPortName names the engine's LMCache worker port, which
	// the LMCache controller (in the router) calls with kvaware routing.
	lmcacheWorkerPortName = "lmcache-worker"
)

// lmcacheRPCTimeout is the chart's VLLM_RPC_TIMEOUT with LMCache.
const lmcacheRPCTimeout = "1000000"

func lmcacheOn(e engine) bool { return enabled(e.cfg.LMCacheConfig.Enabled) }

// lmcacheArgs wires vLLM to LMCache. Nothing is rendered when LMCache is off.
func lmcacheArgs(e engine) []string {
	if !lmcacheOn(e) {
		return nil
	}
	return []string{"--kv-transfer-config", kvTransferConfig(e)}
}

// lmcacheEnv configures LMCache. Buffer sizes are passed as numbers of GiB:
// LMCache parses LMCACHE_MAX_LOCAL_*_SIZE as a number and rejects "4Gi".
func lmcacheEnv(s *resolvedStack, e engine) []corev1.EnvVar {
	if !lmcacheOn(e) {
		return nil
	}
	l := e.cfg.LMCacheConfig
	env := []corev1.EnvVar{
		{Name: "LMCACHE_USE_EXPERIMENTAL", Value: "True"},
	}
	if usesV0Engine(e) {
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
			corev1.EnvVar{Name: "LMCACHE_MAX_LOCAL_CPU_SIZE", Value: gibString(l.CPUOffloadingBufferSize)})
	}
	if l.DiskOffloadingBufferSize != "" {
		env = append(env,
			corev1.EnvVar{Name: "LMCACHE_LOCAL_DISK", Value: lmcacheDiskURL},
			corev1.EnvVar{Name: "LMCACHE_MAX_LOCAL_DISK_SIZE", Value: gibString(l.DiskOffloadingBufferSize)})
	}
	url, serde := l.RemoteURL, l.RemoteSerde
	if url == "" && cacheServerOn(s) {
		// The stack's own cache server, unless the engine names another.
		url, serde = cacheServerURL(s), or(serde, or(s.cacheServer.Serde, defaultCacheServerSerde))
	}
	if url != "" {
		env = append(env, corev1.EnvVar{Name: "LMCACHE_REMOTE_URL", Value: url})
	}
	if serde != "" {
		env = append(env, corev1.EnvVar{Name: "LMCACHE_REMOTE_SERDE", Value: serde})
	}
	return append(env, lmcacheControllerEnv(s, e)...)
}

// kvAware reports whether the engine takes part in kvaware routing: it then
// registers its LMCache worker with the LMCache controller in the router.
// Validation requires LMCache on every model with kvaware.
func kvAware(s *resolvedStack, e engine) bool {
	return s.router.routerType == routingKVAware && lmcacheOn(e)
}

func workerPort(e engine) int32 {
	return ptr.Deref(e.cfg.LMCacheConfig.WorkerPort, DefaultLMCacheWorkerPort)
}

// workerPorts is the range of ports the engine's LMCache workers listen on:
// workerPort and one more per further tensor-parallel worker. It is int64 so
// validation can see a range that runs past 65535.
func workerPorts(e engine) (first, last int64) {
	first = int64(workerPort(e))
	return first, first + int64(tensorParallelSize(e)) - 1
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
func lmcacheControllerEnv(s *resolvedStack, e engine) []corev1.EnvVar {
	if !kvAware(s, e) {
		return nil
	}
	first, last := workerPorts(e)
	ports := make([]string, 0, last-first+1)
	for p := first; p <= last; p++ {
		ports = append(ports, strconv.FormatInt(p, 10))
	}
	heartbeat := ptr.Deref(e.cfg.LMCacheConfig.WorkerHeartbeatTime, DefaultLMCacheWorkerHeartbeatTime)
	return []corev1.EnvVar{
		hashSeedEnv,
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "LMCACHE_ENABLE_CONTROLLER", Value: "True"},
		{Name: "LMCACHE_LMCACHE_INSTANCE_ID", Value: "$(POD_NAME)"},
		{Name: "LMCACHE_CONTROLLER_PULL_URL", Value: controllerURL(s, s.router.controllerPort)},
		{Name: "LMCACHE_CONTROLLER_REPLY_URL", Value: controllerURL(s, s.router.replyPort)},
		{Name: "LMCACHE_LMCACHE_WORKER_PORTS", Value: strings.Join(ports, ",")},
		{Name: "LMCACHE_LMCACHE_WORKER_HEARTBEAT_TIME", Value: strconv.Itoa(int(heartbeat))},
	}
}

// hashSeedEnv fixes Python's hash seed. LMCache names KV cache chunks by
// hashes seeded from PYTHONHASHSEED (random when unset, per process); the
// router hashes a request's tokens to look them up, so with kvaware routing
// the engines and the router need the same seed, or no lookup ever hits.
var hashSeedEnv = corev1.EnvVar{Name: "PYTHONHASHSEED", Value: "0"}

// tensorParallelSize is the number of GPU workers of one engine pod.
func tensorParallelSize(e engine) int32 {
	if n := e.cfg.VLLMConfig.TensorParallelSize; n != nil && *n > 1 {
		return *n
	}
	return 1
}

// lmcacheDiskVolume is the emptyDir that holds the disk buffer when there is
// no model cache volume to put it on; it is sized to the buffer.
func lmcacheDiskVolume(e engine) (corev1.Volume, bool) {
	l := e.cfg.LMCacheConfig
	if !lmcacheOn(e) || l.DiskOffloadingBufferSize == "" || enabled(e.cfg.Storage.Enabled) {
		return corev1.Volume{}, false
	}
	g, _ := gibibytes(l.DiskOffloadingBufferSize)
	size := *resource.NewQuantity(int64(g*gib), resource.BinarySI)
	return corev1.Volume{Name: volumeLMCacheDisk, VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size},
	}}, true
}

// gibString formats a validated buffer size as a decimal number of GiB,
// e.g. "4" for 4Gi and "0.5" for 512Mi.
func gibString(v string) string {
	g, _ := gibibytes(v)
	return strconv.FormatFloat(g, 'f', -1, 64)
}
