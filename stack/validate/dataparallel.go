package validate

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// validateDataParallel refuses data and expert parallelism that vLLM or the
// stack could not run as asked (issue 41): the GPU arithmetic of a replica,
// the ranks of each pod, expert parallelism over a single GPU, what a
// release does not have, and what does not combine yet; each message says
// the arithmetic and the fix.
func validateDataParallel(f *Findings, e resolve.Engine) {
	v := e.Cfg.VLLMConfig
	dp, tp, pp := e.DataParallel, ptr.Deref(v.TensorParallelSize, 1), ptr.Deref(v.PipelineParallelSize, 1)
	dpField, localField := e.Origin("vllmConfig.dataParallelSize"), e.Origin("vllmConfig.dataParallelSizeLocal")
	epField := e.Origin("vllmConfig.expertParallel")
	if v.ExpertParallel != nil && !e.ExpertParallel && v.ExpertParallel.EPLB.GetEnabled() {
		f.errorf("%s.eplb balances the experts of expert parallelism, and %s.enabled is false: remove eplb or turn expert parallelism on", epField, epField)
	}
	if e.ExpertParallel && int64(dp)*int64(tp) < 2 {
		f.errorf("%s: expert parallelism spreads the experts over dataParallelSize × tensorParallelSize GPUs, and %d × %d = 1: set %s (or vllmConfig.tensorParallelSize) above 1, or remove expertParallel",
			epField, dp, tp, dpField)
	}
	if dp > 1 || e.ExpertParallel {
		validateParallelReleases(f, e, dpField, epField)
	}
	if l := v.DataParallelSizeLocal; l != nil && dp == 1 && *l > 1 {
		f.errorf("%s %d: vllmConfig.dataParallelSize is 1, so each pod runs one rank; set %s to %d or leave dataParallelSizeLocal out", localField, *l, dpField, *l*max(e.PodsPerReplica, 1))
	}
	if dp < 2 {
		return
	}
	validateDataParallelGPUs(f, e, dp, tp, pp, dpField, localField)
	why := ""
	switch c := e.Cfg; {
	case resolve.Disaggregated(c):
		why = "disaggregation: the NIXL side channel of each data-parallel rank of a prefill pod is not established here; serve the groups without data parallelism"
	case e.LMCache:
		why = "lmcacheConfig.enabled: LMCache's workers and ports per data-parallel rank are not established; turn LMCache off for this model"
	case e.V0Engine:
		why = "vllmConfig.v1 false: data-parallel serving is the V1 engine's (DPAsyncMPClient, vllm/v1/engine/core_client.py); remove v1: false"
	}
	if why != "" {
		f.errorf("%s %d cannot be combined with %s", dpField, dp, why)
	}
}

// validateDataParallelGPUs: every GPU of a replica runs one rank of one
// data-parallel rank's tensor × pipeline group, and a pod holds whole ranks.
func validateDataParallelGPUs(f *Findings, e resolve.Engine, dp, tp, pp int32, dpField, localField string) {
	g, err := resolve.GPUs(e.Cfg.Resources.GPU)
	if err != nil {
		return // validateLayers names the field
	}
	gpuField := e.Origin("resources.gpu")
	perRank := int64(tp) * int64(pp)
	if !e.MultiNode {
		if want := int64(dp) * perRank; g != want {
			f.errorf("%s: dataParallelSize %d × tensorParallelSize %d × pipelineParallelSize %d = %d GPUs, and %s is %d: each data-parallel rank runs on tensorParallelSize × pipelineParallelSize GPUs of the pod; set %s to %d, or dataParallelSize to %d",
				dpField, dp, tp, pp, want, gpuField, g, gpuField, want, max(g/perRank, 1))
		}
		if l := e.Cfg.VLLMConfig.DataParallelSizeLocal; l != nil && *l != dp {
			f.errorf("%s %d: on one pod every rank is local, dataParallelSize %d; set it to %d or leave it out", localField, *l, dp, dp)
		}
		return
	}
	n := e.PodsPerReplica
	if dp%n != 0 {
		f.errorf("%s %d is not divisible by %s.multiNode.podsPerReplica %d: each pod of a replica runs dataParallelSize / podsPerReplica whole ranks; set dataParallelSize to a multiple of %d, e.g. %d",
			dpField, dp, e.Block, n, n, (int64(dp)/int64(n)+1)*int64(n))
		return
	}
	local := dp / n
	if l := e.Cfg.VLLMConfig.DataParallelSizeLocal; l != nil && *l != local {
		f.errorf("%s %d: dataParallelSize %d / multiNode.podsPerReplica %d = %d ranks on each pod; set it to %d or leave it out", localField, *l, dp, n, local, local)
	}
	if want := int64(local) * perRank; g != want {
		f.errorf("%s: resources.gpu %d × podsPerReplica %d = %d GPUs per replica, and dataParallelSize %d × tensorParallelSize %d × pipelineParallelSize %d = %d: each pod runs %d ranks of %d GPUs; set %s to %d",
			e.Block+".multiNode", g, n, g*int64(n), dp, tp, pp, int64(dp)*perRank, local, perRank, gpuField, want)
	}
}

// validateParallelReleases refuses what the engine's release does not have
// (upstream/dataparallel.go), naming the release.
func validateParallelReleases(f *Findings, e resolve.Engine, dpField, epField string) {
	if e.VLLMErr != nil {
		return
	}
	ver := e.VLLM.Version
	if e.DataParallel > 1 && e.MultiNode && ver.Less(resolve.MultiNodeSince) {
		f.errorf("%s %d with multiNode needs vLLM %s or later, where each pod of a group takes its ranks from its --node-rank (the mp backend's --nnodes); vLLM %s runs a group on Ray: use vLLM %s or later, or serve each replica on one pod",
			dpField, e.DataParallel, resolve.MultiNodeSince, e.VLLM, resolve.MultiNodeSince)
	}
	if e.EPLB != nil && ver.Less(upstream.VLLMEPLBFirst) {
		f.errorf("%s.eplb: vLLM %s has no expert-parallel load balancer (--enable-eplb came with %s): use vLLM %s or later, or remove eplb", epField, e.VLLM, upstream.VLLMEPLBFirst, upstream.VLLMEPLBFirst)
	}
	if b := resolve.All2AllBackend(e); b != "" {
		if first, ok := upstream.All2AllBackendFirst[b]; ok && ver.Less(first) {
			f.errorf("%s.all2allBackend %s: vLLM %s does not have it (it came with %s; this release has %s): use vLLM %s or later, or another backend",
				epField, b, e.VLLM, first, backendsAt(ver), first)
		}
	}
}

// backendsAt lists the all-to-all backends a release has.
func backendsAt(v upstream.Version) string {
	var out []string
	for b, first := range upstream.All2AllBackendFirst {
		if v.AtLeast(first) {
			out = append(out, b)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// spreadByExperts is how many ways expert parallelism spreads a model's
// weights beyond tensor and pipeline parallelism, for a sizing warning that
// must be certain: the data-parallel ranks, as if every weight were an
// expert's (the attention weights are not spread, so a replica needs more).
func spreadByExperts(e resolve.Engine) (int, string) {
	if !e.ExpertParallel || e.DataParallel < 2 {
		return 1, ""
	}
	return int(e.DataParallel), fmt.Sprintf(" × dataParallelSize %d (expert parallelism spreads the experts over the ranks; counted as if every weight were an expert's)", e.DataParallel)
}
