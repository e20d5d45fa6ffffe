package helm2stack

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// The chart's raySpec (tutorial 15) runs a model as a KubeRay RayCluster: a
// head pod (raySpec.headNode's resources) and replicaCount worker pods (the
// model's resources) of one engine, `vllm serve … --distributed-executor-
// backend ray`, with vllmConfig.pipelineParallelSize, which the chart reads
// for raySpec models only (multinode.tsv chart rows). The stack's form is
// multiNode: a LeaderWorkerSet whose groups are a leader and workers of the
// same pod, running vLLM's own multi-node backend instead of Ray.

// rayModel is what a model of the chart's values says of raySpec.
type rayModel struct {
	path   string          // the values path of raySpec when enabled, else ""
	head   map[string]node // raySpec.headNode's keys
	pp     *int32          // vllmConfig.pipelineParallelSize
	ppPath string
}

// raySpec records an enabled raySpec of the current model.
func (c *converter) raySpec(n node) error {
	if n.v == nil {
		return nil
	}
	f, err := n.fields()
	if err != nil {
		return err
	}
	on := false
	if e, ok := f["enabled"]; ok {
		if on, err = e.boolean(); err != nil {
			return err
		}
	}
	if !on {
		return nil
	}
	c.cur.ray.path = n.path
	if h, ok := f["headNode"]; ok && h.v != nil {
		if c.cur.ray.head, err = h.fields(); err != nil {
			return err
		}
	}
	return nil
}

// pipelineParallel records vllmConfig.pipelineParallelSize of the current
// model: the chart reads it only with raySpec.
func (c *converter) pipelineParallel(n node) error {
	if n.empty() {
		return nil
	}
	pp, err := n.int32p()
	c.cur.ray.pp, c.cur.ray.ppPath = pp, n.path
	return err
}

// completeRay makes the current model multi-node when its raySpec is on,
// once all its keys are read: a group of replicaCount+1 pods, one replica.
func (c *converter) completeRay() {
	m, r := c.cur, c.cur.ray
	if r.path == "" {
		if r.pp != nil {
			c.res.note(r.ppPath, "ignored, as by the chart: the chart reads it for raySpec models only")
		}
		return
	}
	e := c.engine()
	workers := ptr.Deref(e.Replicas, 1)
	e.MultiNode = &v1alpha1.MultiNode{PodsPerReplica: workers + 1}
	e.Replicas = nil
	if r.pp != nil {
		ensure(&e.VLLMConfig).PipelineParallelSize = r.pp
	}
	c.res.note(r.path, fmt.Sprintf("converted: the KubeRay RayCluster (a head and %s, Ray as vLLM's distributed backend) becomes multiNode.podsPerReplica %d: a LeaderWorkerSet whose one group is a leader and %s of the model's pod, with vLLM's own multi-node backend from vLLM 0.12.0, Ray before (the cluster needs LeaderWorkerSet)", count(workers, "worker"), workers+1, count(workers, "worker")))
	if _, ok := m.fields["replicaCount"]; ok {
		c.res.note(m.path+".replicaCount", fmt.Sprintf("the chart's Ray workers of one engine: the stack runs one replica of %d pods", workers+1))
	}
	// The leader is the model's pod: the head's resources are kept only
	// where they are the model's.
	own := map[string]string{"requestCPU": "", "requestMemory": "", "requestGPU": ""}
	if res := e.Resources; res != nil {
		own["requestCPU"], own["requestMemory"], own["requestGPU"] = res.CPU, res.Memory, res.GPU
	}
	for _, k := range slices.Sorted(maps.Keys(r.head)) {
		v := r.head[k]
		switch want, known := own[k]; {
		case !known:
			c.res.note(r.path+".headNode."+k, "left out: the leader is a pod like the workers, with the model's settings")
		default:
			if s, err := v.scalar(); err != nil || strings.TrimSpace(s) != want {
				c.res.note(r.path+".headNode."+k, fmt.Sprintf("left out: the leader gets the model's %s %q, as every pod of a group", k, want))
			}
		}
	}
}

// count is n things, as words: "1 worker", "3 workers".
func count(n int32, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
