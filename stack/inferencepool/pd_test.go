package inferencepool

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vllm-project/function-vllm-stack/upstream"
)

// TestConfigPD: the scorers, the P/D plugins, the data layer, then a
// prefill and a decode profile, each its filter before the scorers; the
// headers handler only where the profile handler does not set the header
// (v0.7.0, v0.8.0).
func TestConfigPD(t *testing.T) {
	const v010 = `apiVersion: llm-d.ai/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: queue-scorer
- type: kv-cache-utilization-scorer
- type: prefix-cache-scorer
- type: prefill-filter
- type: decode-filter
- type: always-disagg-pd-decider
- type: disagg-profile-handler
  parameters:
    profiles:
      prefill: prefill
      decode: decode
    deciders:
      prefill: always-disagg-pd-decider
- type: metrics-data-source
- type: core-metrics-extractor
schedulingProfiles:
- name: prefill
  plugins:
  - pluginRef: prefill-filter
  - pluginRef: queue-scorer
    weight: 2
  - pluginRef: kv-cache-utilization-scorer
    weight: 2
  - pluginRef: prefix-cache-scorer
    weight: 3
- name: decode
  plugins:
  - pluginRef: decode-filter
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
`
	if diff := cmp.Diff(v010, ConfigPD(llmd010, DefaultWeights, "", 0)); diff != "" {
		t.Errorf("llm-d 0.10.0 (-want +got):\n%s", diff)
	}
	const v07 = `apiVersion: inference.networking.x-k8s.io/v1alpha1
kind: EndpointPickerConfig
plugins:
- type: prefix-cache-scorer
- type: prefill-filter
- type: decode-filter
- type: always-disagg-pd-decider
- type: disagg-profile-handler
  parameters:
    profiles:
      prefill: prefill
      decode: decode
    deciders:
      prefill: always-disagg-pd-decider
- type: disagg-headers-handler
  parameters:
    prefillProfile: prefill
schedulingProfiles:
- name: prefill
  plugins:
  - pluginRef: prefill-filter
  - pluginRef: prefix-cache-scorer
    weight: 1
- name: decode
  plugins:
  - pluginRef: decode-filter
  - pluginRef: prefix-cache-scorer
    weight: 1
`
	if diff := cmp.Diff(v07, ConfigPD(llmd07, Weights{PrefixCache: 1}, "", 0)); diff != "" {
		t.Errorf("llm-d 0.7.0, one scorer (-want +got):\n%s", diff)
	}
	p := testPool(llmd010, 1)
	p.Picker.Disaggregated = true
	if got := ConfigMap(p).Data[ConfigKey]; got != v010 {
		t.Errorf("ConfigMap of a disaggregated model's picker is not ConfigPD:\n%s", got)
	}
}

// TestSidecar: the sidecar's flags by release (--model-server-port from
// v0.10.0), on the pool's port in front of vLLM, plain HTTP, ready on its
// own /health.
func TestSidecar(t *testing.T) {
	s := Sidecar{Image: "img", PullPolicy: corev1.PullIfNotPresent, Release: upstream.V(0, 10, 0), Port: 8000, EnginePort: DecodeEnginePort}
	want := corev1.Container{
		Name: "routing-sidecar", Image: "img", ImagePullPolicy: corev1.PullIfNotPresent,
		Args:  []string{"--port=8000", "--model-server-port=8200", "--kv-connector=nixlv2", "--secure-proxy=false"},
		Ports: []corev1.ContainerPort{{Name: "sidecar-http", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/health", Port: intstr.FromInt32(8000), Scheme: corev1.URISchemeHTTP}}, PeriodSeconds: 5, FailureThreshold: 3},
	}
	if diff := cmp.Diff(want, SidecarContainer(s)); diff != "" {
		t.Errorf("v0.10.0 (-want +got):\n%s", diff)
	}
	for _, v := range []upstream.Version{upstream.V(0, 7, 0), upstream.V(0, 8, 0), upstream.V(0, 9, 0)} {
		s.Release = v
		if diff := cmp.Diff([]string{"--port=8000", "--vllm-port=8200", "--kv-connector=nixlv2", "--secure-proxy=false"}, SidecarArgs(s)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", v, diff)
		}
	}
}
