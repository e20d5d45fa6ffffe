package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// TestPrecisePrefixRender: example/stacks/precise-prefix.yaml renders the
// engines' KV events (--kv-events-config with the topic the picker parses,
// on port 5557), their block size and hash seed, and the picker's precise
// pipeline on llm-d v0.10.0 with the same block size and seed, the model's
// engine Service as its tokenizer, and the other scorers' weights
// (PRECISE-PREFIX.md).
func TestPrecisePrefixRender(t *testing.T) {
	rsp := mustRun(t, req(t, stacktest.LoadXR(t, "../example/stacks/precise-prefix.yaml", ""), nil, nil))
	pod := desired(t, rsp, "engine-chat", &appsv1.Deployment{}).Spec.Template.Spec
	c := pod.Containers[0]
	got := slices.DeleteFunc(slices.Clone(c.Args), func(a string) bool {
		return !strings.HasPrefix(a, "--block-size") && !strings.HasPrefix(a, "--kv-events")
	})
	want := []string{
		"--block-size=16",
		`--kv-events-config={"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557","topic":"kv@$(POD_IP):8000@Qwen/Qwen3-8B"}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("engine's KV events arguments (-want +got):\n%s", diff)
	}
	if c.Env[0].Name != "POD_IP" {
		t.Errorf("the engine's first variable is %s, want POD_IP, which the topic's $(POD_IP) expands from", c.Env[0].Name)
	}
	if !slices.Contains(c.Env, corev1.EnvVar{Name: "PYTHONHASHSEED", Value: "0"}) {
		t.Errorf("engine has no PYTHONHASHSEED=0, the picker's hashSeed: %v", c.Env)
	}
	if !slices.Contains(c.Ports, corev1.ContainerPort{Name: "kv-events", ContainerPort: 5557, Protocol: corev1.ProtocolTCP}) {
		t.Errorf("engine does not declare the kv-events port 5557: %v", c.Ports)
	}
	cfg := desired(t, rsp, "engine-chat-epp-config", &corev1.ConfigMap{}).Data["config.yaml"]
	if diff := cmp.Diff(precisePickerConfigV010, cfg); diff != "" {
		t.Errorf("picker configuration (-want +got):\n%s", diff)
	}
}

const precisePickerConfigV010 = `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
  parameters:
    prefixMatchInfoProducerName: precise-prefix-cache-producer
- type: token-producer
  parameters:
    modelName: "Qwen/Qwen3-8B"
    vllm:
      url: http://precise-chat-engine-service.llm.svc:80
- type: endpoint-notification-source
- type: precise-prefix-cache-producer
  parameters:
    tokenProcessorConfig:
      blockSizeTokens: 16
      hashSeed: "0"
    kvEventsConfig:
      topicFilter: "kv@"
      concurrency: 4
      discoverPods: true
      podDiscoveryConfig:
        socketPort: 5557
- type: metrics-data-source
- type: core-metrics-extractor
schedulingProfiles:
- name: default
  plugins:
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: kv-cache-utilization-scorer
    weight: 2
  - pluginRef: prefix-cache-scorer
    weight: 3
dataLayer:
  sources:
  - pluginRef: metrics-data-source
    extractors:
    - pluginRef: core-metrics-extractor
  - pluginRef: endpoint-notification-source
    extractors:
    - pluginRef: precise-prefix-cache-producer
`
