package status

import "github.com/vllm-project/function-vllm-stack/stack"

// Pods only explain a workload that is not ready: deploymentProgress and
// leaderWorkerSetProgress read them after the workload's own status said it
// does not serve, never for one that does. A stack whose every such workload
// is observed, ready and current reports the same status whatever its pods
// are, so the function need not ask Crossplane for them, and a reconcile of
// a serving stack takes one call instead of two (issue 34).

// NeedsPods reports whether the stack's pods can change what Observe said of
// it (st): whether an engine's Deployment or LeaderWorkerSet, or the
// router's Deployment, is not observed (not created yet, or Crossplane could
// not read it), does not decode, or is not ready and current. A model is
// Ready exactly when its workload is; the router is not Ready either while
// its Service is missing, when the pods are asked for though they explain
// nothing more. The endpoint pickers of the inference extension are read
// without pods. What Observe says of readiness never depends on the pods, so
// the answer is the same on every call of a reconcile, with or without them:
// Crossplane's requirement loop settles. A model with runtime adapters
// always needs them: its pods say where each adapter is loaded.
func NeedsPods(parts stack.Parts, st Status) bool {
	for _, m := range st.Models {
		if !m.Ready {
			return true
		}
	}
	for _, e := range parts.Engines {
		if len(e.Adapters) > 0 {
			return true // the adapters' state is on the pods (adapterStatus)
		}
	}
	return len(parts.Pools) == 0 && !st.Router.Ready
}
