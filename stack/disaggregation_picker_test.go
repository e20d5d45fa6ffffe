package stack

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// pdGieXR is a disaggregated model behind the inference extension.
func pdGieXR(kv ...any) map[string]any {
	return gieXR(append([]any{"vllmConfig.image", "vllm/vllm-openai:v0.12.0", "disaggregation", map[string]any{}}, kv...)...)
}

// TestPickerPDObjects: one pool and picker for the model, beside both
// groups' engines; the pool selects the stack's serving pods; the groups'
// pods carry the role label, the decode pods the routing sidecar on the
// engine port with vLLM behind it on 8200, probed there; the prefill pods
// are unchanged but for the label.
func TestPickerPDObjects(t *testing.T) {
	rsp := reconciled(t, pdGieXR(), nil)
	if rsp.refusal != "" {
		t.Fatal(rsp.refusal)
	}
	want := []string{"engine-m-prefill", "engine-m-prefill-service", "engine-m-prefill-storage",
		"engine-m-inferencepool", "engine-m-epp", "engine-m-epp-service", "engine-m-epp-serviceaccount", "engine-m-epp-config", "engine-m-epp-role", "engine-m-epp-rolebinding",
		"engine-m-httproute",
		"engine-m-decode", "engine-m-decode-service", "engine-m-decode-storage"}
	if diff := cmp.Diff(want, keys(rsp)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	pool := rsp.objects["engine-m-inferencepool"].(*unstructured.Unstructured)
	sel, _, _ := unstructured.NestedStringMap(pool.Object, "spec", "selector", "matchLabels")
	if diff := cmp.Diff(map[string]string{names.LabelInstance: "s", names.LabelComponent: names.ComponentEngine}, sel); diff != "" {
		t.Errorf("pool selector (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"/m s-m-pool 10m", "/ s-m-pool 10m"}, routeRules(t, rsp, "engine-m-httproute")); diff != "" {
		t.Errorf("route rules (-want +got):\n%s", diff)
	}

	prefill := rsp.objects["engine-m-prefill"].(*appsv1.Deployment).Spec.Template
	decode := rsp.objects["engine-m-decode"].(*appsv1.Deployment).Spec.Template
	if got := prefill.Labels["llm-d.ai/role"]; got != "prefill" {
		t.Errorf("prefill pods' llm-d.ai/role %q, want prefill", got)
	}
	if got := decode.Labels["llm-d.ai/role"]; got != "decode" {
		t.Errorf("decode pods' llm-d.ai/role %q, want decode", got)
	}
	if n := len(prefill.Spec.Containers); n != 1 {
		t.Errorf("prefill pods: %d containers, want vLLM alone", n)
	}
	pv := prefill.Spec.Containers[0]
	if v, _ := stacktest.ArgValue(pv.Args, "--port"); v != "8000" || pv.ReadinessProbe.HTTPGet.Port != intstr.FromInt32(8000) {
		t.Errorf("prefill vLLM: --port %s, readiness on %v, want 8000", v, pv.ReadinessProbe.HTTPGet.Port)
	}

	if n := len(decode.Spec.Containers); n != 2 {
		t.Fatalf("decode pods: %d containers, want vLLM and the routing sidecar", n)
	}
	dv, sc := decode.Spec.Containers[0], decode.Spec.Containers[1]
	if v, _ := stacktest.ArgValue(dv.Args, "--port"); v != "8200" {
		t.Errorf("decode vLLM --port %s, want 8200", v)
	}
	for name, p := range map[string]*corev1.Probe{"startup": dv.StartupProbe, "readiness": dv.ReadinessProbe, "liveness": dv.LivenessProbe} {
		if p.HTTPGet.Port != intstr.FromInt32(8200) {
			t.Errorf("decode vLLM %s probe on %v, want vLLM's 8200", name, p.HTTPGet.Port)
		}
	}
	if diff := cmp.Diff([]corev1.ContainerPort{{Name: "container-port", ContainerPort: 8200, Protocol: corev1.ProtocolTCP}, {Name: "nixl", ContainerPort: 5600, Protocol: corev1.ProtocolTCP}}, dv.Ports); diff != "" {
		t.Errorf("decode vLLM ports (-want +got):\n%s", diff)
	}
	wantSidecar := corev1.Container{
		Name: "routing-sidecar", Image: "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0",
		Args:  []string{"--port=8000", "--model-server-port=8200", "--kv-connector=nixlv2", "--secure-proxy=false"},
		Ports: []corev1.ContainerPort{{Name: "sidecar-http", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/health", Port: intstr.FromInt32(8000), Scheme: corev1.URISchemeHTTP}}, PeriodSeconds: 5, FailureThreshold: 3},
		// Requests in flight pass through it: it outlives the routing
		// delay and the drain.
		Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 35}}},
	}
	if diff := cmp.Diff(wantSidecar, sc); diff != "" {
		t.Errorf("routing sidecar (-want +got):\n%s", diff)
	}

	// The picker reads its configuration at start: its pods carry the
	// configuration's digest, so turning disaggregation on or off restarts
	// it with the other one.
	epp := rsp.objects["engine-m-epp"].(*appsv1.Deployment)
	cm := rsp.objects["engine-m-epp-config"].(*corev1.ConfigMap)
	if diff := cmp.Diff(map[string]string{"serving.vllm.ai/picker-config": inferencepool.ConfigDigest(cm.Data["config.yaml"])}, epp.Spec.Template.Annotations); diff != "" {
		t.Errorf("picker pod annotations (-want +got):\n%s", diff)
	}
	for _, want := range []string{"- type: disagg-profile-handler\n", "- name: prefill\n  plugins:\n  - pluginRef: prefill-filter\n", "- name: decode\n  plugins:\n  - pluginRef: decode-filter\n"} {
		if !strings.Contains(cm.Data["config.yaml"], want) {
			t.Errorf("picker configuration has no %q:\n%s", want, cm.Data["config.yaml"])
		}
	}
}

// TestPickerPDSidecarImage: the sidecar published with the picker's
// release by default (renamed at v0.9.0), its flags by its tag's release,
// else the picker's.
func TestPickerPDSidecarImage(t *testing.T) {
	for name, tc := range map[string]struct {
		picker, sidecar string
		image           string
		args            []string
	}{
		"Default":     {"", "", "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.10.0", []string{"--port=8000", "--model-server-port=8200", "--kv-connector=nixlv2", "--secure-proxy=false"}},
		"Picker090":   {"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0", "", "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.9.0", []string{"--port=8000", "--vllm-port=8200", "--kv-connector=nixlv2", "--secure-proxy=false"}},
		"Picker070":   {"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.7.0", "", "ghcr.io/llm-d/llm-d-routing-sidecar:v0.7.0", []string{"--port=8000", "--vllm-port=8200", "--kv-connector=nixlv2", "--secure-proxy=false"}},
		"MirrorNoTag": {"ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.8.0", "registry.example.com/llm-d/llm-d-routing-sidecar:main", "registry.example.com/llm-d/llm-d-routing-sidecar:main", []string{"--port=8000", "--vllm-port=8200", "--kv-connector=nixlv2", "--secure-proxy=false"}},
		"OwnTag":      {"", "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.9.0", "ghcr.io/llm-d/llm-d-router-disagg-sidecar:v0.9.0", []string{"--port=8000", "--vllm-port=8200", "--kv-connector=nixlv2", "--secure-proxy=false"}},
	} {
		t.Run(name, func(t *testing.T) {
			xr := pdGieXR()
			if tc.picker != "" {
				stacktest.SetPath(xr, "spec.inferenceExtension.picker", map[string]any{"image": tc.picker})
			}
			if tc.sidecar != "" {
				stacktest.SetPath(xr, "spec.inferenceExtension.routingSidecar", map[string]any{"image": tc.sidecar, "imagePullPolicy": "IfNotPresent"})
			}
			rsp := mustRun(t, req(t, xr, nil, nil))
			c := rsp.objects["engine-m-decode"].(*appsv1.Deployment).Spec.Template.Spec.Containers[1]
			if c.Image != tc.image {
				t.Errorf("image %s, want %s", c.Image, tc.image)
			}
			if diff := cmp.Diff(tc.args, c.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPickerPDRefusals: what the picker or its sidecar cannot serve, each
// naming the release or the field and the fix.
func TestPickerPDRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"GAIE": {pdGieXR("inferenceExtension.picker", map[string]any{"image": "registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0"}),
			"spec.inferenceExtension: spec.disaggregation needs the picker to schedule prefill and decode itself, and the picker is gaie 1.5.0 (picker.image registry.k8s.io/gateway-api-inference-extension/epp:v1.5.0): the inference extension's own picker has no prefill and decode plugins (epp-plugins.tsv); use llm-d's picker 0.7.0 or later (ghcr.io/llm-d/llm-d-router-endpoint-picker), or route the model through the production-stack router (remove inferenceExtension)"},
		"LLMD060": {pdGieXR("inferenceExtension.picker", map[string]any{"image": "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.6.0"}),
			"spec.inferenceExtension: spec.disaggregation needs the picker to schedule prefill and decode itself, and the picker is llm-d 0.6.0 (picker.image ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.6.0): llm-d 0.6.0 has only the pd-profile-handler and its sidecar the --connector flag, whose configuration the function does not render; use llm-d's picker 0.7.0 or later (ghcr.io/llm-d/llm-d-router-endpoint-picker), or route the model through the production-stack router (remove inferenceExtension)"},
		"LMCache": {pdGieXR("vllmConfig.image", "lmcache/vllm-openai:2025-05-27-v1", "disaggregation", map[string]any{"transfer": "lmcache"}),
			"spec.disaggregation.transfer lmcache cannot go behind the endpoint picker: llm-d's routing sidecar moves the KV cache by nixlv2, shared-storage, sglang, mooncake or offloading, none of them LMCache's push from the prefill engine to the decode group's receiver; use transfer nixl, or route the model through the production-stack router (remove inferenceExtension)"},
		"MultiNode": {pdGieXR("multiNode", map[string]any{"podsPerReplica": 2}),
			"spec: a multi-node disaggregated model behind the endpoint picker needs the routing sidecar on its decode leaders, which the stack does not render yet: serve each group on one node, or route the model through the production-stack router (remove inferenceExtension)"},
		"SidecarUnknown": {pdGieXR("inferenceExtension.routingSidecar", map[string]any{"image": "example.com/proxy:v0.10.0"}),
			"spec.inferenceExtension.routingSidecar.image example.com/proxy:v0.10.0 is not llm-d's routing sidecar (ghcr.io/llm-d/llm-d-router-disagg-sidecar, or ghcr.io/llm-d/llm-d-routing-sidecar before v0.9.0): the function spells the sidecar's flags by release, so it must know which program runs; use one of them, or your mirror of one under the same repository name"},
		"SidecarOld": {pdGieXR("inferenceExtension.routingSidecar", map[string]any{"image": "ghcr.io/llm-d/llm-d-routing-sidecar:v0.6.0"}),
			"spec.inferenceExtension.routingSidecar.image ghcr.io/llm-d/llm-d-routing-sidecar:v0.6.0 runs the sidecar of llm-d 0.6.0 (routingSidecar.image ghcr.io/llm-d/llm-d-routing-sidecar:v0.6.0), older than 0.7.0, the first whose flags the function renders (--kv-connector): use 0.7.0 or later"},
		"InitContainerName": {pdGieXR("pod.initContainers", []any{map[string]any{"name": "routing-sidecar", "image": "busybox", "ports": []any{map[string]any{"containerPort": 9000, "name": "sidecar-http"}}}}),
			`spec: pod.initContainers[0].name "routing-sidecar" is also the name of the routing sidecar: container names must be unique in the pod; spec: pod.initContainers[0] port name "sidecar-http" is also the name of another port of the pod: port names must be unique`},
		"OtherModel": {gieXR("vllmConfig.image", "vllm/vllm-openai:v0.12.0", "model", nil, "models", []any{
			map[string]any{"name": "a", "modelURL": "org/a", "disaggregation": map[string]any{}},
			map[string]any{"name": "b", "modelURL": "org/b"}}),
			"spec.models[0].disaggregation: a stack with a disaggregated model serves that model alone: its InferencePool selects the stack's serving pods, both groups'; serve the other models from stacks of their own"},
	} {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, tc.xr); !strings.Contains(got, tc.want) {
				t.Errorf("refusal:\n got: %s\nwant: …%s…", got, tc.want)
			}
		})
	}
}
