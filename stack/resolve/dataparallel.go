package resolve

import "k8s.io/utils/ptr"

// Data and expert parallelism (issue 41). A replica of the model runs
// DataParallel ranks, each a copy of the engine on tensorParallelSize ×
// pipelineParallelSize GPUs; on one pod all of them, with multiNode
// DataParallelLocal = DataParallel / podsPerReplica on each pod of the
// LeaderWorkerSet's group (validation refuses what does not divide). The
// replica serves through one API endpoint, its pod or its group's leader:
// vLLM's internal load balancing spreads requests over the ranks, which is
// what the router and the endpoint picker see and route to (one endpoint per
// pod, or per group).

// deriveParallelism sets the engine's data- and expert-parallel facts.
func deriveParallelism(e *Engine) {
	v := e.Cfg.VLLMConfig
	e.DataParallel = max(ptr.Deref(v.DataParallelSize, 1), 1)
	e.DataParallelLocal = e.DataParallel
	if e.MultiNode {
		e.DataParallelLocal = max(e.DataParallel/e.PodsPerReplica, 1)
	}
	if l := v.DataParallelSizeLocal; l != nil && *l > 0 {
		e.DataParallelLocal = *l
	}
	e.ExpertParallel = v.ExpertParallel.GetEnabled()
	e.EPLB = nil
	if e.ExpertParallel && v.ExpertParallel.EPLB.GetEnabled() {
		e.EPLB = v.ExpertParallel.EPLB
	}
}

// All2AllBackend is the engine's expert-parallel all-to-all backend, "" for
// vLLM's default or without expert parallelism.
func All2AllBackend(e Engine) string {
	if !e.ExpertParallel {
		return ""
	}
	return e.Cfg.VLLMConfig.ExpertParallel.All2AllBackend
}
