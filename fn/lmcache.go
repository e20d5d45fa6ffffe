package fn

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

const (
	lmcacheDiskPath   = modelCachePath + "/lmcache"
	lmcacheDiskURL    = "file://" + lmcacheDiskPath + "/"
	volumeLMCacheDisk = "lmcache-disk"
	// kvTransferV1 and kvTransferV0 connect vLLM's KV cache to LMCache; the
	// V0 connector is for engines that run with VLLM_USE_V1=0.
	kvTransferV1 = `{"kv_connector":"LMCacheConnectorV1","kv_role":"kv_both"}`
	kvTransferV0 = `{"kv_connector":"LMCacheConnector","kv_role":"kv_both"}`
)

func lmcacheOn(e engine) bool { return enabled(e.cfg.LMCacheConfig.Enabled) }

// lmcacheArgs wires vLLM to LMCache. Nothing is rendered when LMCache is off.
func lmcacheArgs(e engine) []string {
	if !lmcacheOn(e) {
		return nil
	}
	if v1 := e.cfg.VLLMConfig.V1; v1 != nil && !*v1 {
		return []string{"--kv-transfer-config", kvTransferV0}
	}
	return []string{"--kv-transfer-config", kvTransferV1}
}

// lmcacheEnv configures LMCache. Buffer sizes are passed as numbers of GiB:
// LMCache parses LMCACHE_MAX_LOCAL_*_SIZE as a number and rejects "4Gi".
func lmcacheEnv(s *stack, e engine) []corev1.EnvVar {
	if !lmcacheOn(e) {
		return nil
	}
	l := e.cfg.LMCacheConfig
	env := []corev1.EnvVar{
		{Name: "LMCACHE_USE_EXPERIMENTAL", Value: "True"},
		{Name: "LMCACHE_LOG_LEVEL", Value: "INFO"},
	}
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
	return env
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
