package transition

import (
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// A model's workload changes kind or key when its topology changes: one
// Deployment (engine-M), a LeaderWorkerSet (engine-M-leaderworkerset, with
// multiNode) or two groups' Deployments (engine-M-prefill and
// engine-M-decode, with disaggregation). Crossplane deletes whatever the
// desired state no longer holds, so rendering only the new topology would
// delete the serving workload at once. Make before break: while the old
// workload is observed and the new one is not ready, the old one is kept
// as it is observed (its spec unchanged, so nothing rolls it), with what it
// needs to keep serving (its Service, claim and chat template, where the new
// topology has other keys for them). When the two topologies need different
// routing logic (disaggregation on or off), the router is kept as observed
// too until the new workload is ready, then the router for the new topology
// is rendered, and the old workload goes once the router runs it.

// topology names a model's workload shape.
type topology int

const (
	topologyDeployment topology = iota
	topologyLeaderWorkerSet
	topologyGroups
)

// describe is how the status names a topology's workload.
func (t topology) describe() string {
	switch t {
	case topologyLeaderWorkerSet:
		return "a LeaderWorkerSet"
	case topologyGroups:
		return "prefill and decode Deployments"
	}
	return "a Deployment"
}

// A keyed is a composition resource name and the kind its object must be.
type keyed struct {
	key, apiVersion, kind string
}

// topologyKeys are the workloads and the objects serving them (Service,
// claim, chat template) of model id in a topology.
func topologyKeys(t topology, id string) (workloads, support []keyed) {
	deployment := func(id string) keyed { return keyed{names.EngineKey(id), "apps/v1", "Deployment"} }
	serving := func(id string) []keyed {
		return []keyed{
			{names.EngineServiceKey(id), "v1", "Service"},
			{names.EngineStorageKey(id), "v1", "PersistentVolumeClaim"},
			{names.EngineTemplateKey(id), "v1", "ConfigMap"},
		}
	}
	switch t {
	case topologyLeaderWorkerSet:
		return []keyed{{names.EngineLWSKey(id), lwsv1.GroupVersion.String(), "LeaderWorkerSet"}}, serving(id)
	case topologyGroups:
		for _, role := range resolve.RoleGroups {
			g := names.GroupID(id, role)
			workloads = append(workloads, deployment(g))
			support = append(support, serving(g)...)
		}
		// A shared claim is the model's own.
		return workloads, append(support, keyed{names.EngineStorageKey(id), "v1", "PersistentVolumeClaim"})
	}
	return []keyed{deployment(id)}, serving(id)
}

// topologyOf is the topology of a model's engines (one, or its two groups).
func topologyOf(e resolve.Engine) topology {
	switch ok := e.MultiNode; {
	case e.Role != "":
		return topologyGroups
	case ok:
		return topologyLeaderWorkerSet
	}
	return topologyDeployment
}

// poolKeys are the objects of a model's pool that decide which pods serve
// it and how: the pool (its selector), the picker's configuration, and the
// picker's Deployment, which reads the configuration at start.
func poolKeys(modelID string) []keyed {
	return []keyed{
		{names.EngineKey(modelID) + "-inferencepool", inferencepool.PoolAPIVersion, inferencepool.PoolKind},
		{names.PickerKey(modelID) + "-config", "v1", "ConfigMap"},
		{names.PickerKey(modelID), "apps/v1", "Deployment"},
	}
}
