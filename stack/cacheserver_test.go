package stack

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
)

// TestCacheServerCommand: every image runs lmcache_server <host> <port>, the
// only server current LMCache ships; lmcache/vllm-openai images from the
// path the chart uses.
func TestCacheServerCommand(t *testing.T) {
	for image, want := range map[string][]string{
		"lmcache/vllm-openai:latest":           {"/opt/venv/bin/lmcache_server", "0.0.0.0", "8080"},
		"lmcache/vllm-openai:latest-nightly":   {"/opt/venv/bin/lmcache_server", "0.0.0.0", "8080"},
		"lmcache/vllm-openai:v0.3.1":           {"/opt/venv/bin/lmcache_server", "0.0.0.0", "8080"},
		"registry.example/team/lmcache:2026.1": {"lmcache_server", "0.0.0.0", "8080"},
	} {
		if diff := cmp.Diff(want, build.CacheServerCommand(image)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", image, diff)
		}
	}
}

func TestCacheServer(t *testing.T) {
	xr := with("lmcacheConfig", map[string]any{"enabled": true, "server": map[string]any{"image": "lmcache/vllm-openai:2025-05-27-v1", "replicas": 2}})
	rsp := mustRun(t, req(t, xr, nil, nil))
	d := desired(t, rsp, "cache-server", &appsv1.Deployment{})
	c := d.Spec.Template.Spec.Containers[0]
	if d.Name != "s-deployment-cache-server" || *d.Spec.Replicas != 2 || c.Image != "lmcache/vllm-openai:2025-05-27-v1" {
		t.Errorf("cache server Deployment %s replicas %d image %s", d.Name, *d.Spec.Replicas, c.Image)
	}
	if diff := cmp.Diff([]string{"/opt/venv/bin/lmcache_server", "0.0.0.0", "8080"}, c.Command); diff != "" {
		t.Errorf("command (-want +got):\n%s", diff)
	}
	svc := desired(t, rsp, "cache-server-service", &corev1.Service{})
	if svc.Name != "s-cache-server-service" || svc.Spec.Ports[0].Port != 80 || svc.Spec.Ports[0].TargetPort.IntValue() != 8080 ||
		svc.Spec.Selector[names.LabelComponent] != "cache-server" || d.Spec.Template.Labels[names.LabelComponent] != "cache-server" {
		t.Errorf("cache server Service %s %+v selects %v", svc.Name, svc.Spec.Ports, svc.Spec.Selector)
	}
	gotEnv := engineContainer0(t, rsp, "engine-m").Env
	want := withPodIP(env("HF_HOME", "/data", "LMCACHE_USE_EXPERIMENTAL", "True", "LMCACHE_LOG_LEVEL", "INFO",
		"LMCACHE_REMOTE_URL", "lm://s-cache-server-service:80", "LMCACHE_REMOTE_SERDE", "naive")...)
	if diff := cmp.Diff(want, gotEnv); diff != "" {
		t.Errorf("engines use the stack's cache server (-want +got):\n%s", diff)
	}

	own := mustRun(t, req(t, with("lmcacheConfig", map[string]any{"enabled": true, "remoteUrl": "lm://elsewhere:80", "server": map[string]any{}}), nil, nil))
	if got := engineContainer0(t, own, "engine-m").Env; got[len(got)-1].Value != "lm://elsewhere:80" {
		t.Errorf("an engine's own remoteUrl wins over the cache server: %v", got)
	}
}

func TestCacheServerOnlyTopLevel(t *testing.T) {
	xr := with("model", nil, "models", []any{map[string]any{"name": "a", "modelURL": "x", "lmcacheConfig": map[string]any{"server": map[string]any{}}}})
	want := "invalid ProductionStack: spec.models[0].lmcacheConfig.server: the cache server is shared by the stack: set it in spec.lmcacheConfig.server"
	if got := fatal(t, run(t, req(t, xr, nil, nil))); got != want {
		t.Errorf("Fatal message:\n got: %s\nwant: %s", got, want)
	}
}

func TestLoRA(t *testing.T) {
	xr := with("model.enableLoRA", true, "model.loraAdapters", []any{
		map[string]any{"name": "sql", "path": "org/sql-lora"}, map[string]any{"name": "chat", "path": "/data/adapters/chat"}})
	d := desired(t, mustRun(t, req(t, xr, nil, nil)), "engine-m", &appsv1.Deployment{})
	if diff := cmp.Diff(args("--enable-lora", "--lora-modules", "sql=org/sql-lora", "chat=/data/adapters/chat"), d.Spec.Template.Spec.Containers[0].Args); diff != "" {
		t.Errorf("args (-want +got):\n%s", diff)
	}
	want := corev1.Container{
		Name: "sidecar", Image: "lmcache/lmstack-sidecar:latest",
		Env:          []corev1.EnvVar{{Name: "PORT", Value: "30090"}, {Name: "LORA_DOWNLOAD_BASE_DIR", Value: "/data/lora-adapters"}},
		Ports:        []corev1.ContainerPort{{Name: "sidecar-port", ContainerPort: 30090, Protocol: corev1.ProtocolTCP}},
		VolumeMounts: []corev1.VolumeMount{{Name: "s-storage", MountPath: "/data"}},
		Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{"cpu": resource.MustParse("500m"), "memory": resource.MustParse("128Mi")}},
	}
	if len(d.Spec.Template.Spec.Containers) != 2 {
		t.Fatalf("want vllm and the LoRA sidecar, got %d containers", len(d.Spec.Template.Spec.Containers))
	}
	if diff := cmp.Diff(want, d.Spec.Template.Spec.Containers[1]); diff != "" {
		t.Errorf("sidecar (-want +got):\n%s", diff)
	}
	for name, xr := range map[string]map[string]any{
		"NoLoRA":          minimalXR(),
		"NoStorage":       with("model.enableLoRA", true, "storage.enabled", false),
		"SidecarDisabled": with("model.enableLoRA", true, "loraSidecar.enabled", false),
	} {
		if n := len(desired(t, mustRun(t, req(t, xr, nil, nil)), "engine-m", &appsv1.Deployment{}).Spec.Template.Spec.Containers); n != 1 {
			t.Errorf("%s: %d containers, want vllm only", name, n)
		}
	}
	bad := with("model.loraAdapters", []any{map[string]any{"name": "sql", "path": "org/sql-lora"}})
	want2 := "invalid ProductionStack: spec.model.loraAdapters needs enableLoRA: true: vLLM loads adapters only with LoRA enabled"
	if got := fatal(t, run(t, req(t, bad, nil, nil))); got != want2 {
		t.Errorf("Fatal message:\n got: %s\nwant: %s", got, want2)
	}
}

// TestCacheServerScheduling: the cache server needs memory, not GPUs, and
// platform teams place it on its own nodes.
func TestCacheServerScheduling(t *testing.T) {
	xr := with("lmcacheConfig.enabled", true, "lmcacheConfig.server", map[string]any{
		"scheduling": map[string]any{"nodeSelector": map[string]any{"pool": "memory"}, "priorityClassName": "cache"},
	})
	pod := desired(t, mustRun(t, req(t, xr, nil, nil)), names.CacheServerKey, &appsv1.Deployment{}).Spec.Template.Spec
	if !cmp.Equal(pod.NodeSelector, map[string]string{"pool": "memory"}) || pod.PriorityClassName != "cache" {
		t.Errorf("cache server nodeSelector %v, priorityClassName %q; want pool=memory, cache", pod.NodeSelector, pod.PriorityClassName)
	}
}
