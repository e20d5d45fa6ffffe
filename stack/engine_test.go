package stack

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// minimalXR is the smallest valid stack: one model by URL, in namespace llm.
var baseArgs = []string{"org/m", "--host", "0.0.0.0", "--port", "8000", "--shutdown-timeout=30"}

func args(extra ...string) []string { return append(append([]string{}, baseArgs...), extra...) }

// oldArgs are args of a release before --shutdown-timeout (0.19.0).
func oldArgs(extra ...string) []string { return append(append([]string{}, baseArgs[:5]...), extra...) }

// TestEngineArgs covers each row of SPEC §3 that becomes an argument of
// `vllm serve`, on and off, in the documented order.
func TestEngineArgs(t *testing.T) {
	cases := map[string]struct {
		xr   map[string]any
		want []string
	}{
		"Minimal":              {xr: minimalXR(), want: baseArgs},
		"PathUsesNameAsServed": {xr: with("model.path", "/models/m", "model.modelURL", nil), want: []string{"/models/m", "--served-model-name=m", "--host", "0.0.0.0", "--port", "8000", "--shutdown-timeout=30"}},
		"PathUsesURLAsServed":  {xr: with("model.path", "/models/m"), want: []string{"/models/m", "--served-model-name=org/m", "--host", "0.0.0.0", "--port", "8000", "--shutdown-timeout=30"}},
		"PathWithServedName":   {xr: with("model.path", "/models/m", "model.servedModelName", "chat"), want: []string{"/models/m", "--served-model-name=chat", "--host", "0.0.0.0", "--port", "8000", "--shutdown-timeout=30"}},
		"ServedModelName":      {xr: with("model.servedModelName", "chat"), want: []string{"org/m", "--served-model-name=chat", "--host", "0.0.0.0", "--port", "8000", "--shutdown-timeout=30"}},
		"EnableLoRA":           {xr: with("model.enableLoRA", true), want: args("--enable-lora")},
		"EnableLoRAOff":        {xr: with("model.enableLoRA", false), want: baseArgs},
		"EnableTool":           {xr: with("model.enableTool", true, "model.toolCallParser", "hermes"), want: args("--enable-auto-tool-choice", "--tool-call-parser=hermes")},
		"ToolParserOnly":       {xr: with("model.toolCallParser", "hermes"), want: args("--tool-call-parser=hermes")},
		"ChatTemplate":         {xr: with("model.chatTemplate", "{{ x }}"), want: args("--chat-template", "/templates/chat-template.jinja")},
		"TrustRemoteCode":      {xr: with("model.trustRemoteCode", true), want: args("--trust-remote-code")},
		"TrustRemoteCodeOff":   {xr: with("model.trustRemoteCode", false), want: baseArgs},
		"DType":                {xr: with("model.dtype", "bfloat16"), want: args("--dtype=bfloat16")},
		"MaxNumSeqs":           {xr: with("model.maxNumSeqs", 128), want: args("--max-num-seqs=128")},
		"MaxModelLen":          {xr: with("model.maxModelLen", 32768), want: args("--max-model-len=32768")},
		"ChunkedPrefillOn":     {xr: with("vllmConfig.enableChunkedPrefill", true), want: args("--enable-chunked-prefill")},
		"ChunkedPrefillOff":    {xr: with("vllmConfig.enableChunkedPrefill", false), want: args("--no-enable-chunked-prefill")},
		// vLLM 0.8.3 and 0.8.4 have no --no- form (StoreBoolean); 0.8.5
		// rejects "=false" (BooleanOptionalAction).
		"ChunkedPrefillOff083": {xr: with("vllmConfig.enableChunkedPrefill", false, "vllmConfig.image", "vllm/vllm-openai:v0.8.3"), want: oldArgs("--enable-chunked-prefill=false")},
		"ChunkedPrefillOff084": {xr: with("vllmConfig.enableChunkedPrefill", false, "vllmConfig.engineVersion", "0.8.4"), want: oldArgs("--enable-chunked-prefill=false")},
		"ChunkedPrefillOff085": {xr: with("vllmConfig.enableChunkedPrefill", false, "vllmConfig.image", "vllm/vllm-openai:v0.8.5"), want: oldArgs("--no-enable-chunked-prefill")},
		"ChunkedPrefillOn083":  {xr: with("vllmConfig.enableChunkedPrefill", true, "vllmConfig.image", "vllm/vllm-openai:v0.8.3"), want: oldArgs("--enable-chunked-prefill")},
		"PrefixCachingOn":      {xr: with("vllmConfig.enablePrefixCaching", true), want: args("--enable-prefix-caching")},
		"PrefixCachingOff":     {xr: with("vllmConfig.enablePrefixCaching", false), want: args("--no-enable-prefix-caching")},
		"TensorParallel":       {xr: with("vllmConfig.tensorParallelSize", 2, "resources.gpu", "2"), want: args("--tensor-parallel-size=2")},
		"GPUMemoryUtilization": {xr: with("vllmConfig.gpuMemoryUtilization", "0.85"), want: args("--gpu-memory-utilization=0.85")},
		"MaxLoras":             {xr: with("model.enableLoRA", true, "vllmConfig.maxLoras", 4), want: args("--enable-lora", "--max-loras=4")},
		"MaxLorasZeroIsUnset":  {xr: with("vllmConfig.maxLoras", 0), want: baseArgs},
		"ExtraArgsLast":        {xr: with("vllmConfig.extraArgs", []any{"--block-size=16", "--seed", "1"}, "model.dtype", "half"), want: args("--dtype=half", "--block-size=16", "--seed", "1")},
		"LMCacheV1":            {xr: with("lmcacheConfig.enabled", true), want: args("--kv-transfer-config", upstream.KVTransferV1)},
		// The V0 connector needs an LMCache with lmcache.experimental, which
		// no vllm/vllm-openai image has: an lmcache/vllm-openai image of then.
		"LMCacheV0":      {xr: with("lmcacheConfig.enabled", true, "vllmConfig.v1", false, "vllmConfig.engineVersion", "0.10.0", "vllmConfig.image", "lmcache/vllm-openai:2025-04-18"), want: oldArgs("--kv-transfer-config", upstream.KVTransferV0)},
		"LMCacheV0On083": {xr: with("lmcacheConfig.enabled", true, "vllmConfig.v1", false, "vllmConfig.engineVersion", "0.8.3", "vllmConfig.image", "lmcache/vllm-openai:2025-04-18"), want: oldArgs("--kv-transfer-config", upstream.KVTransferV0)},
		"LoRAModules": {
			xr: with("model.enableLoRA", true, "model.loraAdapters", []any{
				map[string]any{"name": "sql", "path": "/data/lora/sql"},
				map[string]any{"name": "eq", "path": "/data/lora/a=b"},
				map[string]any{"name": "comma", "path": "/data/lora/a,b"},
			}),
			// vLLM reads an item as name=path only without ',' and with one
			// '='; anything else as JSON.
			want: args("--enable-lora", "--lora-modules", "sql=/data/lora/sql",
				`{"name":"eq","path":"/data/lora/a=b"}`, `{"name":"comma","path":"/data/lora/a,b"}`),
		},
		"LMCacheOff":             {xr: with("lmcacheConfig.enabled", false, "lmcacheConfig.cpuOffloadingBufferSize", "4Gi"), want: baseArgs},
		"LMCacheBeforeExtraArgs": {xr: with("lmcacheConfig.enabled", true, "vllmConfig.extraArgs", []any{"--x"}), want: args("--kv-transfer-config", upstream.KVTransferV1, "--x")},
		"Everything": {
			xr: with("model.enableLoRA", true, "model.enableTool", true, "model.toolCallParser", "llama3_json",
				"model.chatTemplate", "t", "model.trustRemoteCode", true, "model.dtype", "float16", "model.maxNumSeqs", 8,
				"model.maxModelLen", 1024, "vllmConfig.enableChunkedPrefill", true, "vllmConfig.enablePrefixCaching", false,
				"vllmConfig.tensorParallelSize", 1, "vllmConfig.gpuMemoryUtilization", "1", "vllmConfig.maxLoras", 2,
				"vllmConfig.extraArgs", []any{"--z"}, "resources.gpu", "1"),
			want: args("--enable-lora", "--enable-auto-tool-choice", "--tool-call-parser=llama3_json",
				"--chat-template", "/templates/chat-template.jinja", "--trust-remote-code", "--dtype=float16",
				"--max-num-seqs=8", "--max-model-len=1024", "--enable-chunked-prefill", "--no-enable-prefix-caching",
				"--tensor-parallel-size=1", "--gpu-memory-utilization=1", "--max-loras=2", "--z"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := engineContainer0(t, mustRun(t, req(t, tc.xr, nil, nil)), "engine-m")
			if diff := cmp.Diff(tc.want, c.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

func secretEnvVar(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

func env(kv ...string) []corev1.EnvVar {
	out := []corev1.EnvVar{}
	for i := 0; i < len(kv); i += 2 {
		out = append(out, corev1.EnvVar{Name: kv[i], Value: kv[i+1]})
	}
	return out
}

var hfHome = env("HF_HOME", "/data")

// podIP is the first variable of every engine, so the others may use
// $(POD_IP).
var podIP = corev1.EnvVar{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}}

// withPodIP is an engine's environment: POD_IP, then env.
func withPodIP(env ...corev1.EnvVar) []corev1.EnvVar {
	return append([]corev1.EnvVar{podIP}, env...)
}

// engineEnvOf is an engine's environment of POD_IP and the variables kv.
func engineEnvOf(kv ...string) []corev1.EnvVar { return withPodIP(env(kv...)...) }

// TestEngineEnv covers each row of SPEC §3 that becomes an environment
// variable, including LMCache, and the user's env overriding by name.
func TestEngineEnv(t *testing.T) {
	cases := map[string]struct {
		xr   map[string]any
		want []corev1.EnvVar
	}{
		"StorageSetsHFHome":  {xr: minimalXR(), want: hfHome},
		"NoStorageOnlyPodIP": {xr: with("storage.enabled", false), want: nil},
		"HFTokenDefaultKey":  {xr: with("vllmConfig.hfTokenSecret.name", "hf"), want: append(env("HF_HOME", "/data"), secretEnvVar("HF_TOKEN", "hf", "token"))},
		"HFTokenKey":         {xr: with("vllmConfig.hfTokenSecret", map[string]any{"name": "hf", "key": "hf_token"}), want: append(env("HF_HOME", "/data"), secretEnvVar("HF_TOKEN", "hf", "hf_token"))},
		"LoRA":               {xr: with("model.enableLoRA", true), want: env("HF_HOME", "/data", "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "True")},
		// VLLM_USE_V1 is read up to vLLM 0.11.0 ("0" only up to 0.10.2).
		"V1On":           {xr: with("vllmConfig.v1", true, "vllmConfig.engineVersion", "0.11.0"), want: env("HF_HOME", "/data", "VLLM_USE_V1", "1")},
		"V1OnIgnored":    {xr: with("vllmConfig.v1", true, "vllmConfig.engineVersion", "0.11.1"), want: hfHome},
		"V1OnNewest":     {xr: with("vllmConfig.v1", true), want: hfHome},
		"V1Off":          {xr: with("vllmConfig.v1", false, "vllmConfig.image", "vllm/vllm-openai:v0.10.2"), want: env("HF_HOME", "/data", "VLLM_USE_V1", "0")},
		"V1OffOn083":     {xr: with("vllmConfig.v1", false, "vllmConfig.image", "vllm/vllm-openai:v0.8.3"), want: env("HF_HOME", "/data", "VLLM_USE_V1", "0")},
		"LMCacheMinimal": {xr: with("lmcacheConfig.enabled", true), want: env("HF_HOME", "/data", "LMCACHE_USE_EXPERIMENTAL", "True", "LMCACHE_LOG_LEVEL", "INFO")},
		"LMCacheDisabledLeaksNothing": {
			xr:   with("lmcacheConfig", map[string]any{"enabled": false, "cpuOffloadingBufferSize": "4Gi", "diskOffloadingBufferSize": "8Gi", "remoteUrl": "lm://x:80", "remoteSerde": "naive"}),
			want: hfHome,
		},
		"LMCacheBuffersAsGiB": {
			xr: with("lmcacheConfig", map[string]any{"enabled": true, "cpuOffloadingBufferSize": "4Gi", "diskOffloadingBufferSize": "1536Mi"}),
			want: env("HF_HOME", "/data", "LMCACHE_USE_EXPERIMENTAL", "True", "LMCACHE_LOG_LEVEL", "INFO",
				"LMCACHE_LOCAL_CPU", "True", "LMCACHE_MAX_LOCAL_CPU_SIZE", "4",
				"LMCACHE_LOCAL_DISK", "file:///data/lmcache/", "LMCACHE_MAX_LOCAL_DISK_SIZE", "1.5"),
		},
		"LMCachePlainNumberIsGiB": {
			xr:   with("lmcacheConfig", map[string]any{"enabled": true, "cpuOffloadingBufferSize": "2.5"}),
			want: env("HF_HOME", "/data", "LMCACHE_USE_EXPERIMENTAL", "True", "LMCACHE_LOG_LEVEL", "INFO", "LMCACHE_LOCAL_CPU", "True", "LMCACHE_MAX_LOCAL_CPU_SIZE", "2.5"),
		},
		"LMCacheRemote": {
			xr:   with("lmcacheConfig", map[string]any{"enabled": true, "remoteUrl": "lm://cache:80", "remoteSerde": "cachegen"}),
			want: env("HF_HOME", "/data", "LMCACHE_USE_EXPERIMENTAL", "True", "LMCACHE_LOG_LEVEL", "INFO", "LMCACHE_REMOTE_URL", "lm://cache:80", "LMCACHE_REMOTE_SERDE", "cachegen"),
		},
		"UserEnvAppended": {xr: with("env", []any{map[string]any{"name": "A", "value": "1"}}), want: env("HF_HOME", "/data", "A", "1")},
		"UserEnvOverridesComputedInPlace": {
			xr:   with("model.enableLoRA", true, "env", []any{map[string]any{"name": "HF_HOME", "value": "/cache"}, map[string]any{"name": "B", "value": "2"}}),
			want: env("HF_HOME", "/cache", "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "True", "B", "2"),
		},
		"UserEnvValueFrom": {
			xr:   with("env", []any{map[string]any{"name": "KEY", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "s", "key": "k"}}}}),
			want: append(env("HF_HOME", "/data"), secretEnvVar("KEY", "s", "k")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := engineContainer0(t, mustRun(t, req(t, tc.xr, nil, nil)), "engine-m")
			if diff := cmp.Diff(withPodIP(tc.want...), c.Env); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEngineImage(t *testing.T) {
	cases := map[string]struct {
		xr          map[string]any
		input       map[string]any
		wantImage   string
		wantCommand []string
		wantPolicy  corev1.PullPolicy
		wantSecrets []corev1.LocalObjectReference
	}{
		"Default":          {xr: minimalXR(), wantImage: "docker.io/vllm/vllm-openai:latest", wantCommand: []string{"vllm", "serve"}},
		"Tagged":           {xr: with("vllmConfig.image", "vllm/vllm-openai:v0.9.0"), wantImage: "docker.io/vllm/vllm-openai:v0.9.0", wantCommand: []string{"vllm", "serve"}},
		"Registry":         {xr: with("vllmConfig.image", "vllm/vllm-openai:v0.9.0", "vllmConfig.imagePullRegistry", "registry.example.com/mirror"), wantImage: "registry.example.com/mirror/vllm/vllm-openai:v0.9.0", wantCommand: []string{"vllm", "serve"}},
		"ImageNamesHost":   {xr: with("vllmConfig.image", "ghcr.io/org/vllm:1", "vllmConfig.imagePullRegistry", "quay.io"), wantImage: "ghcr.io/org/vllm:1", wantCommand: []string{"vllm", "serve"}},
		"ImageNamesPort":   {xr: with("vllmConfig.image", "registry:5000/vllm:1"), wantImage: "registry:5000/vllm:1", wantCommand: []string{"vllm", "serve"}},
		"Localhost":        {xr: with("vllmConfig.image", "localhost/vllm:dev"), wantImage: "localhost/vllm:dev", wantCommand: []string{"vllm", "serve"}},
		"LMCacheImage":     {xr: with("vllmConfig.image", "lmcache/vllm-openai:latest"), wantImage: "docker.io/lmcache/vllm-openai:latest", wantCommand: []string{"/opt/venv/bin/vllm", "serve"}},
		"InputDefaults":    {xr: minimalXR(), input: map[string]any{"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input", "engine": map[string]any{"image": "vllm/vllm-openai:v0.8.5", "imagePullRegistry": "mirror.local"}}, wantImage: "mirror.local/vllm/vllm-openai:v0.8.5", wantCommand: []string{"vllm", "serve"}},
		"PullPolicySecret": {xr: with("vllmConfig.imagePullPolicy", "Always", "vllmConfig.imagePullSecretName", "regcred"), wantImage: "docker.io/vllm/vllm-openai:latest", wantCommand: []string{"vllm", "serve"}, wantPolicy: corev1.PullAlways, wantSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := desired(t, mustRun(t, req(t, tc.xr, tc.input, nil)), "engine-m", &appsv1.Deployment{})
			c := d.Spec.Template.Spec.Containers[0]
			if c.Image != tc.wantImage {
				t.Errorf("image = %q, want %q", c.Image, tc.wantImage)
			}
			if diff := cmp.Diff(tc.wantCommand, c.Command); diff != "" {
				t.Errorf("command (-want +got):\n%s", diff)
			}
			if c.ImagePullPolicy != tc.wantPolicy {
				t.Errorf("imagePullPolicy = %q, want %q", c.ImagePullPolicy, tc.wantPolicy)
			}
			if diff := cmp.Diff(tc.wantSecrets, d.Spec.Template.Spec.ImagePullSecrets); diff != "" {
				t.Errorf("imagePullSecrets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEngineResources(t *testing.T) {
	q := resource.MustParse
	cases := map[string]struct {
		xr   map[string]any
		want corev1.ResourceRequirements
	}{
		"None": {xr: with("resources", nil), want: corev1.ResourceRequirements{}},
		"OneGPU": {xr: minimalXR(), want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"nvidia.com/gpu": q("1")},
			Limits:   corev1.ResourceList{"nvidia.com/gpu": q("1")},
		}},
		"CPUMemoryGPU": {xr: with("resources", map[string]any{"cpu": "4", "memory": "16Gi", "gpu": "2"}), want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": q("4"), "memory": q("16Gi"), "nvidia.com/gpu": q("2")},
			Limits:   corev1.ResourceList{"nvidia.com/gpu": q("2")},
		}},
		"GPUType": {xr: with("resources", map[string]any{"gpu": "1", "gpuType": "amd.com/gpu"}), want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"amd.com/gpu": q("1")},
			Limits:   corev1.ResourceList{"amd.com/gpu": q("1")},
		}},
		"ZeroGPU": {xr: with("resources", map[string]any{"cpu": "500m", "gpu": "0"}), want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": q("500m")},
		}},
		"Limits": {xr: with("resources", map[string]any{"cpu": "4", "cpuLimit": "8", "memory": "16Gi", "memoryLimit": "16Gi", "gpu": "1"}), want: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"cpu": q("4"), "memory": q("16Gi"), "nvidia.com/gpu": q("1")},
			Limits:   corev1.ResourceList{"cpu": q("8"), "memory": q("16Gi"), "nvidia.com/gpu": q("1")},
		}},
		"MemoryLimitOnly": {xr: with("resources", map[string]any{"memoryLimit": "64Gi"}), want: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"memory": q("64Gi")},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := engineContainer0(t, mustRun(t, req(t, tc.xr, nil, nil)), "engine-m")
			if diff := cmp.Diff(tc.want, c.Resources); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEngineDeployment(t *testing.T) {
	cases := map[string]struct {
		xr           map[string]any
		wantReplicas int32
		wantStrategy appsv1.DeploymentStrategy
	}{
		"Defaults": {xr: minimalXR(), wantReplicas: 1, wantStrategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}}},
		"Recreate": {xr: with("deploymentStrategy", "Recreate", "replicas", 3, "storage.accessModes", []any{"ReadWriteMany"}), wantReplicas: 3, wantStrategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}},
		"ZeroReplicas": {xr: with("replicas", 0), wantReplicas: 0, wantStrategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := desired(t, mustRun(t, req(t, tc.xr, nil, nil)), "engine-m", &appsv1.Deployment{})
			if d.Spec.Replicas == nil || *d.Spec.Replicas != tc.wantReplicas {
				t.Errorf("replicas = %v, want %d (0 must be sent, not left out)", d.Spec.Replicas, tc.wantReplicas)
			}
			if diff := cmp.Diff(tc.wantStrategy, d.Spec.Strategy); diff != "" {
				t.Errorf("strategy (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEngineProbes: startup allows 10 s x 60 for large models to load,
// then readiness (5 s x 3) and liveness (10 s x 3), all GET /health on 8000.
func TestEngineProbes(t *testing.T) {
	c := engineContainer0(t, mustRun(t, req(t, minimalXR(), nil, nil)), "engine-m")
	probe := func(period, failures int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8000), Scheme: corev1.URISchemeHTTP}},
			PeriodSeconds: period, FailureThreshold: failures}
	}
	for name, got := range map[string]struct{ got, want *corev1.Probe }{
		"startup":   {c.StartupProbe, probe(10, 60)},
		"readiness": {c.ReadinessProbe, probe(5, 3)},
		"liveness":  {c.LivenessProbe, probe(10, 3)},
	} {
		if diff := cmp.Diff(got.want, got.got); diff != "" {
			t.Errorf("%s probe (-want +got):\n%s", name, diff)
		}
	}
	if diff := cmp.Diff([]corev1.ContainerPort{{Name: "container-port", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}}, c.Ports); diff != "" {
		t.Errorf("ports (-want +got):\n%s", diff)
	}
}

// TestEngineVolumes covers storage, chat template, /dev/shm for tensor
// parallelism and the LMCache disk buffer.
func TestEngineVolumes(t *testing.T) {
	shm := resource.MustParse("20Gi")
	disk := resource.MustParse("8Gi")
	pvc := func(claim string) corev1.Volume {
		return corev1.Volume{Name: "s-storage", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
	}
	cache := corev1.VolumeMount{Name: "s-storage", MountPath: "/data"}
	cases := map[string]struct {
		xr         map[string]any
		wantVols   []corev1.Volume
		wantMounts []corev1.VolumeMount
	}{
		"OwnedClaim":    {xr: minimalXR(), wantVols: []corev1.Volume{pvc("s-m-storage-claim")}, wantMounts: []corev1.VolumeMount{cache}},
		"ExistingClaim": {xr: with("storage.existingClaimName", "models"), wantVols: []corev1.Volume{pvc("models")}, wantMounts: []corev1.VolumeMount{cache}},
		"NoStorage":     {xr: with("storage.enabled", false)},
		"ChatTemplate": {xr: with("storage.enabled", false, "model.chatTemplate", "t"),
			wantVols:   []corev1.Volume{{Name: "s-m-chat-templates", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "s-m-chat-templates"}}}}},
			wantMounts: []corev1.VolumeMount{{Name: "s-m-chat-templates", MountPath: "/templates", ReadOnly: true}}},
		"TensorParallelShm": {xr: with("storage.enabled", false, "vllmConfig.tensorParallelSize", 2, "resources.gpu", "2"),
			wantVols:   []corev1.Volume{{Name: "shm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &shm}}}},
			wantMounts: []corev1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}}},
		"TensorParallelOneNoShm": {xr: with("storage.enabled", false, "vllmConfig.tensorParallelSize", 1, "resources.gpu", "1")},
		"LMCacheDiskOnModelVolume": {xr: with("lmcacheConfig.enabled", true, "lmcacheConfig.diskOffloadingBufferSize", "8Gi"),
			wantVols: []corev1.Volume{pvc("s-m-storage-claim")}, wantMounts: []corev1.VolumeMount{cache}},
		"LMCacheDiskEmptyDirWithoutStorage": {xr: with("storage.enabled", false, "lmcacheConfig.enabled", true, "lmcacheConfig.diskOffloadingBufferSize", "8"),
			wantVols:   []corev1.Volume{{Name: "lmcache-disk", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &disk}}}},
			wantMounts: []corev1.VolumeMount{{Name: "lmcache-disk", MountPath: "/data/lmcache"}}},
		"LMCacheOffNoDisk": {xr: with("storage.enabled", false, "lmcacheConfig.diskOffloadingBufferSize", "8Gi")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := desired(t, mustRun(t, req(t, tc.xr, nil, nil)), "engine-m", &appsv1.Deployment{})
			if diff := cmp.Diff(tc.wantVols, d.Spec.Template.Spec.Volumes); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMounts, d.Spec.Template.Spec.Containers[0].VolumeMounts); diff != "" {
				t.Errorf("volumeMounts (-want +got):\n%s", diff)
			}
		})
	}
}

// expandEnv is the environment a container sees, as the kubelet computes
// it: in order, each variable's $(NAME) references to variables defined
// before it are replaced, $$ is a literal $, and any other $(NAME) stays as
// written. fields are the downward API's values by fieldPath.
func expandEnv(env []corev1.EnvVar, fields map[string]string) map[string]string {
	out := map[string]string{}
	for _, e := range env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil:
			out[e.Name] = fields[e.ValueFrom.FieldRef.FieldPath]
		case e.ValueFrom != nil:
			out[e.Name] = "<" + e.Name + " from a Secret or ConfigMap>"
		default:
			out[e.Name] = expandRefs(e.Value, out, nil)
		}
	}
	return out
}

// expandRefs replaces $(NAME) in v with defined[NAME] when NAME is defined;
// it reports every undefined NAME to missing.
func expandRefs(v string, defined map[string]string, missing func(string)) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] != '$' || i+1 == len(v) {
			b.WriteByte(v[i])
			continue
		}
		switch next := v[i+1]; {
		case next == '$':
			b.WriteByte('$')
			i++
		case next == '(':
			if end := strings.IndexByte(v[i:], ')'); end > 0 {
				name := v[i+2 : i+end]
				if val, ok := defined[name]; ok {
					b.WriteString(val)
				} else {
					if missing != nil {
						missing(name)
					}
					b.WriteString(v[i : i+end+1])
				}
				i += end
				continue
			}
			b.WriteByte('$')
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// TestEnvReferencesResolve: every $(NAME) the function renders, or a
// stack's env uses for a variable the function sets, names a variable
// defined earlier in the container's env, the only ones Kubernetes expands.
func TestEnvReferencesResolve(t *testing.T) {
	userRef := with("lmcacheConfig.enabled", true, "env", []any{map[string]any{"name": "LMCACHE_P2P_HOST", "value": "$(POD_IP)"}})
	stacks := map[string]map[string]any{"UserPodIPRef": userRef, "KVAware": kvAwareXR()}
	for _, path := range stacktest.Stacks(t) {
		stacks[path] = stacktest.LoadXR(t, path, "")
	}
	for name, xr := range stacks {
		rsp := reconciled(t, xr, stacktest.InputFor(xr))
		for _, k := range keys(rsp) {
			if _, ok := rsp.objects[k].(*appsv1.Deployment); !ok {
				continue
			}
			for _, c := range desired(t, rsp, k, &appsv1.Deployment{}).Spec.Template.Spec.Containers {
				defined := map[string]string{}
				for _, e := range c.Env {
					expandRefs(e.Value, defined, func(ref string) {
						t.Errorf("%s: %s container %s: %s=%s refers to $(%s), not defined before it", name, k, c.Name, e.Name, e.Value, ref)
					})
					defined[e.Name] = "x"
				}
			}
		}
	}
	got := expandEnv(engineContainer0(t, mustRun(t, req(t, userRef, nil, nil)), "engine-m").Env, map[string]string{"status.podIP": "10.1.2.3"})
	if got["LMCACHE_P2P_HOST"] != "10.1.2.3" {
		t.Errorf("LMCACHE_P2P_HOST: $(POD_IP) is %q in the pod, want the pod's IP", got["LMCACHE_P2P_HOST"])
	}
}
