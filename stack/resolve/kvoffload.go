package resolve

import (
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// Where a filesystem offload tier lives (Engine.KVOffloadFS).
const (
	KVOffloadEmptyDir      = "emptyDir"
	KVOffloadNewClaim      = "claim"
	KVOffloadExistingClaim = "existingClaim"
)

// kvOffloadOf: whether the engine offloads its KV cache through vLLM's
// OffloadingConnector, and where its filesystem tier lives.
func kvOffloadOf(e Engine) (bool, string) {
	k := e.Cfg.KVOffloading
	if k == nil {
		return false, ""
	}
	// The tier's kind is the last layer's that sets one: a model's claim
	// replaces the top level's emptyDir, though the blocks merge field by
	// field.
	fs := k.FileSystem
	for i := len(e.Layers) - 1; i >= 0; i-- {
		if l := e.Layers[i].Cfg.KVOffloading; l != nil && l.FileSystem != nil {
			fs = l.FileSystem
			break
		}
	}
	switch {
	case fs == nil:
		return true, ""
	case fs.EmptyDir != nil:
		return true, KVOffloadEmptyDir
	case fs.PersistentVolumeClaim != nil && fs.PersistentVolumeClaim.ClaimName != "":
		return true, KVOffloadExistingClaim
	case fs.PersistentVolumeClaim != nil:
		return true, KVOffloadNewClaim
	}
	return true, ""
}

// KVOffloadInShm reports whether the engine's CPU offload tier is a file in
// /dev/shm: vLLM from 0.20.0 maps it there (shared_offload_region.py).
func KVOffloadInShm(e Engine) bool {
	return e.Cfg.KVOffloading != nil && e.VLLM.Version.AtLeast(upstream.VLLMKVOffloadInShmSince)
}

// KVOffloadCPUBytes is the CPU tier of one engine in bytes (the total of
// its tensor- and pipeline-parallel ranks, as vLLM takes it; each
// data-parallel rank has one), if kvOffloading.cpu parses.
func KVOffloadCPUBytes(e Engine) (int64, bool) {
	k := e.Cfg.KVOffloading
	if k == nil {
		return 0, false
	}
	g, err := Gibibytes(k.CPU)
	if err != nil || g <= 0 {
		return 0, false
	}
	return int64(g * Gib), true
}

// KVOffloadPodBytes is the part of the CPU tier one pod holds. vLLM splits
// a tier over the workers of one engine, its tensor- and pipeline-parallel
// ranks (world_size, vllm/config/parallel.py:833-837; num_copies =
// world_size, vllm/v1/kv_offload/cpu/spec.py:86-103@017e9f4448), so each
// pod of a multi-node replica holds its share; but each data-parallel rank
// is an engine of its own with a whole tier, so a pod holds one per local
// rank.
func KVOffloadPodBytes(e Engine) (int64, bool) {
	b, ok := KVOffloadCPUBytes(e)
	if !ok {
		return 0, false
	}
	switch {
	case e.DataParallel > 1:
		b *= int64(e.DataParallelLocal)
	case e.MultiNode && e.PodsPerReplica > 1:
		b = (b + int64(e.PodsPerReplica) - 1) / int64(e.PodsPerReplica)
	}
	return b, true
}

// ShmQuantity is the size of the engine pod's /dev/shm: shmSize (or its
// default) plus the CPU offload tier it holds from vLLM 0.20.0.
func ShmQuantity(e Engine) resource.Quantity {
	size := resource.MustParse(Or(e.Cfg.Storage.ShmSize, DefaultShmSize))
	if KVOffloadInShm(e) {
		if b, ok := KVOffloadPodBytes(e); ok {
			size.Add(*resource.NewQuantity(b, resource.BinarySI))
		}
	}
	return size
}
