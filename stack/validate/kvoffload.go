package validate

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// The options through which vLLM picks its one KV connector: any of them in
// extraArgs next to a connector the stack renders replaces it (vLLM's
// _post_init_kv_transfer_config sets kv_connector whatever it was,
// vllm/config/vllm.py:937-959@017e9f4448).
var connectorOptions = []string{"--kv-transfer-config", "--kv-offloading-size", "--kv-offloading-backend"}

// validateKVOffload checks kvOffloading against the engine's release, its
// pod's memory, its other KV connectors and its filesystem tier
// (stack/testdata/upstream/kvoffload.tsv).
func validateKVOffload(f *Findings, e resolve.Engine) {
	validateConnectorExtraArgs(f, e)
	k := e.Cfg.KVOffloading
	if k == nil {
		return
	}
	at, name := e.Where("kvOffloading", "kvOffloading.cpu")
	cpuField := name("kvOffloading.cpu")
	switch {
	case e.VLLMErr != nil:
	case e.VLLM.Version.Less(upstream.VLLMKVOffloadingSizeSince):
		f.errorf("%s: kvOffloading needs vLLM %s or later (--kv-offloading-size and the OffloadingConnector's CPU tier sized in bytes, vLLM PRs #27621 and #24498), and the engine runs vLLM %s: use a newer image or LMCache (lmcacheConfig)", at, upstream.VLLMKVOffloadCPUTierSince, e.VLLM)
	case e.VLLM.Version.Less(upstream.VLLMKVOffloadCPUTierSince):
		f.errorf("%s: kvOffloading needs vLLM %s or later, and the engine runs vLLM %s, whose --kv-offloading-size hands the OffloadingConnector num_cpu_blocks 0, which it refuses at start (\"num_cpu_blocks must be specified\"; sized in bytes from vLLM PR #24498): use a newer image or LMCache (lmcacheConfig)", at, upstream.VLLMKVOffloadCPUTierSince, e.VLLM)
	}
	switch {
	case e.LMCache:
		f.errorf("%s: kvOffloading and lmcacheConfig.enabled each need vLLM's one KV connector (OffloadingConnector, LMCacheConnectorV1), and --kv-offloading-size replaces any other: use one of them", at)
	case e.Role != "":
		f.errorf("%s: kvOffloading and disaggregation each need vLLM's one KV connector (OffloadingConnector, and the transfer's NixlConnector or LMCache's), and --kv-offloading-size replaces any other: turn one of them off", at)
	}
	if k.CPU == "" {
		f.errorf("%s: kvOffloading.cpu is required: every block reaches the other tiers through the CPU tier; set its size, e.g. cpu: 40Gi, here or at the top level", e.Block)
	}
	cpu, ok := resolve.KVOffloadCPUBytes(e) // else refused by validateKVOffloadBlock
	if ok {
		validateKVOffloadMemory(f, e, at, cpuField, cpu)
	}
	validateKVOffloadFS(f, e, cpu)
}

// validateKVOffloadBlock checks kvOffloading in one layer, as written: what
// the XRD's rules refuse, named where the user wrote it.
func validateKVOffloadBlock(f *Findings, l resolve.Layer) {
	k := l.Cfg.KVOffloading
	if k == nil {
		return
	}
	p := l.At("kvOffloading")
	if _, err := resolve.Gibibytes(k.CPU); k.CPU != "" && err != nil {
		f.errorf("%s.cpu %q is not a size: use a quantity such as 40Gi or a number of GiB", p, k.CPU)
	}
	fs := k.FileSystem
	if fs == nil {
		return
	}
	p += ".fileSystem"
	if (fs.EmptyDir != nil) == (fs.PersistentVolumeClaim != nil) {
		f.errorf("%s: set exactly one of emptyDir and persistentVolumeClaim", p)
	}
	if d := fs.EmptyDir; d != nil {
		Quantity(f, p+".emptyDir.sizeLimit", d.SizeLimit, "200Gi")
	}
	c := fs.PersistentVolumeClaim
	if c == nil {
		return
	}
	p += ".persistentVolumeClaim"
	objectName(f, p+".claimName", c.ClaimName)
	Quantity(f, p+".size", c.Size, "500Gi")
	if q, err := resolve.ParseQuantity(c.Size); err == nil && q.IsZero() {
		f.errorf("%s.size %q is invalid: a claim must request more than 0 bytes; use a size such as 500Gi", p, c.Size)
	}
	if c.StorageClassName != nil {
		objectName(f, p+".storageClassName", *c.StorageClassName)
	}
	for i, m := range c.AccessModes {
		oneOf(f, fmt.Sprintf("%s.accessModes[%d]", p, i), string(m), accessModes)
	}
	if slices.Contains(c.AccessModes, corev1.ReadWriteOncePod) && len(c.AccessModes) > 1 {
		f.errorf("%s.accessModes %v is invalid: ReadWriteOncePod cannot be combined with other access modes; use [ReadWriteMany]", p, c.AccessModes)
	}
	// The XRD's has(): an empty accessModes list counts as set.
	if c.ClaimName != "" && (c.Size != "" || c.StorageClassName != nil || c.AccessModes != nil) {
		f.errorf("%s.claimName is set, so the stack mounts a claim it does not own: leave out size, storageClassName and accessModes", p)
	}
}

// validateKVOffloadMemory: the CPU tier is the pod's memory (pinned, and a
// file in /dev/shm from vLLM 0.20.0, which the kubelet counts against the
// container's memory), so the pod's memory request and limit must exceed
// the pod's part of it.
func validateKVOffloadMemory(f *Findings, e resolve.Engine, at, cpuField string, cpu int64) {
	pod, _ := resolve.KVOffloadPodBytes(e)
	share := ""
	switch {
	case e.DataParallel > 1:
		share = fmt.Sprintf(" for each of the pod's %d data-parallel ranks is %s per pod, which", e.DataParallelLocal, gib(pod))
	case pod != cpu:
		share = fmt.Sprintf(" over %d pods is %s per pod, which", e.PodsPerReplica, gib(pod))
	}
	c := e.Cfg.Resources
	if c.Memory == "" {
		f.warnf("%s: %s %s%s lives in the engine pod's memory, and resources.memory is unset: request more than it, so the pod lands on a node that has it", at, cpuField, e.Cfg.KVOffloading.CPU, share)
	}
	for _, r := range []struct{ field, v string }{{"resources.memory", c.Memory}, {"resources.memoryLimit", c.MemoryLimit}} {
		q, err := resolve.ParseQuantity(r.v)
		if r.v == "" || err != nil || float64(pod) < q.AsApproximateFloat64() {
			continue
		}
		_, name := e.Where(r.field)
		f.errorf("%s: %s %s%s must be less than %s %s (%s ≥ %s): the CPU tier lives in the engine pod's memory beside vLLM itself; raise %s or lower %s",
			at, cpuField, e.Cfg.KVOffloading.CPU, share, name(r.field), r.v, gib(pod), gib(int64(q.AsApproximateFloat64())), name(r.field), cpuField)
	}
}

// validateKVOffloadFS checks the filesystem tier: its release, one place
// for it, a claim the model's pods can share, and a size above the CPU
// tier's.
func validateKVOffloadFS(f *Findings, e resolve.Engine, cpu int64) {
	fs := e.Cfg.KVOffloading.FileSystem
	if fs == nil {
		return
	}
	at, name := e.Where("kvOffloading.fileSystem")
	p := at + "." + name("kvOffloading.fileSystem")
	if e.VLLMErr == nil && e.VLLM.Version.Less(upstream.VLLMKVOffloadTiersSince) {
		f.errorf("%s needs vLLM %s or later (TieringOffloadingSpec with its secondary tier of type fs; 0.22.0 was cut while the tier was renamed from fs_python), and the engine runs vLLM %s: use a newer image, or the CPU tier alone", p, upstream.VLLMKVOffloadTiersSince, e.VLLM)
	}
	var size, sizeField string
	switch e.KVOffloadFS {
	case "": // refused by validateKVOffloadBlock
		return
	case resolve.KVOffloadEmptyDir:
		size, sizeField = fs.EmptyDir.SizeLimit, p+".emptyDir.sizeLimit"
		f.warnf("%s.emptyDir: vLLM's filesystem tier deletes no block it wrote (vllm/v1/kv_offload/tiering/fs), so the directory only grows: past its sizeLimit the kubelet evicts the pod, and without one it fills the node's disk; a persistentVolumeClaim ends in failed writes instead", p)
	case resolve.KVOffloadExistingClaim:
	default:
		c := fs.PersistentVolumeClaim
		size, sizeField = c.Size, p+".persistentVolumeClaim.size"
		if c.Size == "" {
			f.errorf("%s is required for the claim the stack creates: set it (e.g. 500Gi), or name an existing claim in claimName", sizeField)
		}
		modes := c.AccessModes
		if len(modes) == 0 {
			modes = build.DefaultKVOffloadAccessModes
		}
		if pods := sharingPods(e); pods != "" && !slices.Contains(modes, corev1.ReadWriteMany) {
			f.errorf("%s.persistentVolumeClaim.accessModes %v: %s share the claim, on any node: use [ReadWriteMany]", p, modes, pods)
		}
	}
	if size == "" {
		return
	}
	q, err := resolve.ParseQuantity(size)
	if err != nil { // refused by validateKVOffloadBlock
		return
	}
	if cpu > 0 && float64(cpu) >= q.AsApproximateFloat64() {
		f.warnf("%s %s is not larger than kvOffloading.cpu %s (%s ≤ %s): every block reaches the filesystem tier through the CPU tier, so a smaller one holds little the CPU tier does not; make it larger", sizeField, size, e.Cfg.KVOffloading.CPU, gib(int64(q.AsApproximateFloat64())), gib(cpu))
	}
}

// sharingPods says which pods of the model mount one claim, "" for one pod.
func sharingPods(e resolve.Engine) string {
	switch {
	case e.Autoscaled:
		return "the autoscaled replicas"
	case *e.Cfg.Replicas > 1:
		return fmt.Sprintf("its %d replicas", *e.Cfg.Replicas)
	case e.MultiNode:
		return fmt.Sprintf("the %d pods of a replica", e.PodsPerReplica)
	}
	return ""
}

// validateConnectorExtraArgs refuses extraArgs that pick vLLM's KV
// connector where the stack renders one: kvOffloading, LMCache or a
// disaggregated group's transfer.
func validateConnectorExtraArgs(f *Findings, e resolve.Engine) {
	var owner string
	switch {
	case e.KVOffload:
		owner = e.Block + ".kvOffloading"
	case e.LMCache:
		owner = e.Block + ".lmcacheConfig.enabled"
	case e.Role != "":
		owner = e.Block + ".disaggregation"
	default:
		return
	}
	wired := WiredOptions(e) // refused by validateExtraArgs already
	for i, a := range e.Cfg.VLLMConfig.ExtraArgs {
		for _, key := range connectorOptions {
			if readsAs(e, a, key) == noMatch || slices.ContainsFunc(wired, func(w wiredOption) bool { return w.key == key }) {
				continue
			}
			field, j := extraArgAt(e, i)
			f.errorf("%s[%d] %q: %s sets vLLM's KV connector, and vLLM runs one, which %s replaces: remove it", field, j, a, owner, key)
		}
	}
}

// gib writes bytes as GiB, as the messages' arithmetic does.
func gib(b int64) string {
	return fmt.Sprintf("%.4g GiB", float64(b)/resolve.Gib)
}
