package helm2stack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// rayValues is the chart's tutorial 15-a (values-15-a-minimal-pipeline-
// parallel-example-raycluster.yaml of vllm-stack 0.1.12), with head the
// keys of raySpec.headNode.
func rayValues(head string) string {
	return modelValues15a + `    raySpec:
      enabled: true
      headNode:
` + head
}

// modelValues15a is tutorial 15-a without its raySpec.
const modelValues15a = `
servingEngineSpec:
  runtimeClassName: ""
  modelSpec:
  - name: "distilgpt2-raycluster"
    repository: "lmcache/vllm-openai"
    tag: "latest"
    modelURL: "distilbert/distilgpt2"
    replicaCount: 1
    requestCPU: 1
    requestMemory: "20Gi"
    requestGPU: 1
    vllmConfig:
      tensorParallelSize: 1
      pipelineParallelSize: 2
    shmSize: "20Gi"
`

// TestRaySpec: a raySpec model becomes multi-node: a group of the head and
// the replicaCount workers, one replica, the pipeline stages kept; a head
// unlike the workers is said; without raySpec the chart ignores
// pipelineParallelSize, and so does the stack.
func TestRaySpec(t *testing.T) {
	res, err := Convert([]byte(rayValues("        requestCPU: 1\n        requestMemory: \"20Gi\"\n        requestGPU: 1\n")), Options{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	e := res.Stack.Spec.EngineConfig
	if diff := cmp.Diff(&v1alpha1.MultiNode{PodsPerReplica: 2}, e.MultiNode); diff != "" {
		t.Errorf("multiNode (-want +got):\n%s", diff)
	}
	if e.Replicas != nil || !cmp.Equal(ptr.To[int32](2), e.VLLMConfig.PipelineParallelSize) {
		t.Errorf("replicas %v, pipelineParallelSize %v: want one replica of two stages", e.Replicas, e.VLLMConfig.PipelineParallelSize)
	}
	const converted = "servingEngineSpec.modelSpec[0].raySpec: converted: the KubeRay RayCluster (a head and 1 worker, Ray as vLLM's distributed backend) becomes multiNode.podsPerReplica 2: a LeaderWorkerSet whose one group is a leader and 1 worker of the model's pod, with vLLM's own multi-node backend from vLLM 0.12.0, Ray before (the cluster needs LeaderWorkerSet)"
	if !slicesHasPrefix(findingStrings(res.Notes), converted) {
		t.Errorf("notes %q lack %q", res.Notes, converted)
	}

	// A head of other resources: the leader is the model's pod.
	res, err = Convert([]byte(rayValues("        requestCPU: 4\n        requestMemory: \"20Gi\"\n        requestGPU: 1\n        initContainer: {name: x, image: busybox}\n")), Options{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`servingEngineSpec.modelSpec[0].raySpec.headNode.requestCPU: left out: the leader gets the model's requestCPU "1", as every pod of a group`,
		"servingEngineSpec.modelSpec[0].raySpec.headNode.initContainer: left out: the leader is a pod like the workers, with the model's settings",
	} {
		if !slicesHasPrefix(findingStrings(res.Notes), want) {
			t.Errorf("notes %q lack %q", res.Notes, want)
		}
	}

	// raySpec off: pipelineParallelSize is ignored, as by the chart.
	res, err = Convert([]byte(modelValues15a), Options{Name: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if e := res.Stack.Spec.EngineConfig; e.MultiNode != nil || e.VLLMConfig.PipelineParallelSize != nil {
		t.Errorf("without raySpec: multiNode %v, pipelineParallelSize %v", e.MultiNode, e.VLLMConfig.PipelineParallelSize)
	}
	want := "servingEngineSpec.modelSpec[0].vllmConfig.pipelineParallelSize: ignored, as by the chart: the chart reads it for raySpec models only"
	if !slicesHasPrefix(findingStrings(res.Notes), want) {
		t.Errorf("notes %q lack %q", res.Notes, want)
	}
}
