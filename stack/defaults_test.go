package stack

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// TestDefaultsMatchAPI: the function applies exactly the defaults the API
// declares (xrd/v1alpha1.TopLevelDefaults, which the XRD carries), so a
// stack rendered offline equals one the API server defaulted.
func TestDefaultsMatchAPI(t *testing.T) {
	spec := &v1alpha1.ProductionStackSpec{Model: &v1alpha1.Model{Name: "m", ModelURL: "org/m"}}
	spec.VLLMConfig = &v1alpha1.VLLMConfig{HFTokenSecret: &v1alpha1.SecretKeySelector{Name: "hf"}}
	s := New(resolve.Identity{Name: "s", Namespace: "llm"}, spec, nil)
	cfg := s.r.Engines[0].Cfg
	resolved := map[string]any{
		"spec.deploymentStrategy":           cfg.DeploymentStrategy,
		"spec.replicas":                     *cfg.Replicas,
		"spec.vllmConfig.image":             cfg.VLLMConfig.Image,
		"spec.vllmConfig.imagePullRegistry": cfg.VLLMConfig.ImagePullRegistry,
		"spec.vllmConfig.hfTokenSecret.key": cfg.VLLMConfig.HFTokenSecret.Key,
		"spec.routerConfig.routerType":      s.r.Router.RouterType,
		"spec.routerConfig.sessionKey":      s.r.Router.SessionKey,
		"spec.resources.gpuType":            cfg.Resources.GPUType,
		"spec.storage.enabled":              *cfg.Storage.Enabled,
		"spec.storage.size":                 cfg.Storage.Size,
		"spec.storage.accessModes":          cfg.Storage.AccessModes,
	}
	if len(resolved) != len(v1alpha1.TopLevelDefaults) {
		t.Fatalf("the API declares %d defaults, this test checks %d: add the new one here and to resolveConfig", len(v1alpha1.TopLevelDefaults), len(resolved))
	}
	for _, d := range v1alpha1.TopLevelDefaults {
		got, ok := resolved[d.Path]
		if !ok {
			t.Errorf("default %s is not applied by the function", d.Path)
			continue
		}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(d.Value)
		if string(gj) != string(wj) {
			t.Errorf("default %s: function applies %s, API declares %s", d.Path, gj, wj)
		}
	}
}

// TestMergeFieldByField: a models[] item inherits every top-level engine
// block and overrides it field by field; top-level blocks are not changed.
func TestMergeFieldByField(t *testing.T) {
	top := v1alpha1.EngineConfig{
		DeploymentStrategy: "Recreate",
		Replicas:           ptr.To(int32(2)),
		VLLMConfig:         &v1alpha1.VLLMConfig{Image: "vllm/vllm-openai:v1", GPUMemoryUtilization: "0.9", ExtraArgs: []string{"--a"}},
		Resources:          &v1alpha1.Resources{CPU: "4", Memory: "16Gi", GPU: "1"},
		Env:                []corev1.EnvVar{{Name: "A", Value: "top"}, {Name: "B", Value: "top"}},
		Storage:            &v1alpha1.Storage{Size: "100Gi"},
	}
	item := v1alpha1.EngineConfig{
		VLLMConfig: &v1alpha1.VLLMConfig{GPUMemoryUtilization: "0.5", ExtraArgs: []string{"--b"}},
		Resources:  &v1alpha1.Resources{GPU: "2"},
		Env:        []corev1.EnvVar{{Name: "B", Value: "item"}, {Name: "C", Value: "item"}},
	}
	topBefore := mustJSON(t, top)
	got := resolve.MergeConfig(top, item)
	want := v1alpha1.EngineConfig{
		DeploymentStrategy: "Recreate",
		Replicas:           ptr.To(int32(2)),
		VLLMConfig:         &v1alpha1.VLLMConfig{Image: "vllm/vllm-openai:v1", GPUMemoryUtilization: "0.5", ExtraArgs: []string{"--b"}},
		Resources:          &v1alpha1.Resources{CPU: "4", Memory: "16Gi", GPU: "2"},
		Env:                []corev1.EnvVar{{Name: "A", Value: "top"}, {Name: "B", Value: "item"}, {Name: "C", Value: "item"}},
		Storage:            &v1alpha1.Storage{Size: "100Gi"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged (-want +got):\n%s", diff)
	}
	if mustJSON(t, top) != topBefore {
		t.Error("merging changed the top-level blocks")
	}
	zero := resolve.MergeConfig(top, v1alpha1.EngineConfig{Replicas: ptr.To(int32(0)), Storage: &v1alpha1.Storage{Enabled: ptr.To(false)}})
	if *zero.Replicas != 0 || *zero.Storage.Enabled || zero.Storage.Size != "100Gi" {
		t.Errorf("an item's explicit 0 and false must override: replicas %d, storage %+v", *zero.Replicas, zero.Storage)
	}
}

// TestInputDefaults: the Composition's Input comes before the API defaults.
func TestInputDefaults(t *testing.T) {
	in := &v1beta1.Input{Storage: &v1beta1.StorageInput{StorageClassName: "fast", Size: "200Gi"}}
	cfg := resolve.ResolveConfig(v1alpha1.EngineConfig{}, in)
	if ptr.Deref(cfg.Storage.StorageClassName, "<unset>") != "fast" || cfg.Storage.Size != "200Gi" {
		t.Errorf("Input storage defaults not applied: %+v", cfg.Storage)
	}
	own := resolve.ResolveConfig(v1alpha1.EngineConfig{Storage: &v1alpha1.Storage{Size: "10Gi", StorageClassName: ptr.To("slow")}}, in)
	if ptr.Deref(own.Storage.StorageClassName, "<unset>") != "slow" || own.Storage.Size != "10Gi" {
		t.Errorf("a stack's own storage must win over the Input: %+v", own.Storage)
	}
	// "" (bind a volume without a class) is a choice, not a missing value.
	static := resolve.ResolveConfig(v1alpha1.EngineConfig{Storage: &v1alpha1.Storage{StorageClassName: ptr.To("")}}, in)
	if ptr.Deref(static.Storage.StorageClassName, "<unset>") != "" {
		t.Errorf(`storageClassName "" must not take the Input's class: %+v`, static.Storage)
	}
	existing := resolve.ResolveConfig(v1alpha1.EngineConfig{Storage: &v1alpha1.Storage{ExistingClaimName: "models"}}, in)
	if existing.Storage.Size != "" || existing.Storage.StorageClassName != nil || existing.Storage.AccessModes != nil {
		t.Errorf("an existing claim gets no size, class or modes: %+v", existing.Storage)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMultiModelRendersEachModel: the multi-model example renders one engine
// per model with merged settings, behind one router.
func TestMultiModelRendersEachModel(t *testing.T) {
	rsp := reconciled(t, stacktest.LoadXR(t, "../example/stacks/multi-model.yaml", ""), nil)
	llama := desired(t, rsp, "engine-llama3", &appsv1.Deployment{})
	mistral := desired(t, rsp, "engine-mistral-7b", &appsv1.Deployment{})
	if *llama.Spec.Replicas != 2 || *mistral.Spec.Replicas != 1 {
		t.Errorf("replicas: llama3 %d (set 2), mistral %d (default 1)", *llama.Spec.Replicas, *mistral.Spec.Replicas)
	}
	if got := mistral.Spec.Template.Spec.Containers[0].Env; got[len(got)-1].Value != "DEBUG" || len(got) != 4 {
		t.Errorf("mistral's env must override VLLM_LOG_LEVEL in place: %v", got)
	}
	if n := len(rsp.objects); n != 11 {
		t.Errorf("got %d resources, want 2x(Deployment, Service, PVC) + 5 router objects: %v", n, keys(rsp))
	}
}
