package stack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/vllm-project/function-vllm-stack/stack/adaptersync"
)

const syncImage = "xpkg.example.com/function-vllm-stack:v1"

var syncInput = map[string]any{
	"apiVersion": "vllmstack.fn.crossplane.io/v1beta1", "kind": "Input",
	"adapterSync": map[string]any{"image": syncImage},
}

func adaptersXR(adapters []any, kv ...any) map[string]any {
	return with(append([]any{"model.enableLoRA", true, "model.enableRuntimeAdapters", true, "model.adapters", adapters}, kv...)...)
}

var twoAdapters = []any{
	map[string]any{"name": "sql", "huggingFace": map[string]any{"repo": "org/sql-lora", "revision": "v2"}},
	map[string]any{"name": "local", "path": "/data/adapters/local"},
}

// TestRuntimeAdaptersWiring: the sync container runs the Input's image with
// the program's arguments and downward-API env, the ConfigMap holds the
// program's JSON list, and the RBAC allows only patching pods.
func TestRuntimeAdaptersWiring(t *testing.T) {
	rsp := reconciled(t, adaptersXR(twoAdapters), syncInput)
	if rsp.refusal != "" {
		t.Fatal(rsp.refusal)
	}
	d := desired(t, rsp, "engine-m", &appsv1.Deployment{})
	pod := d.Spec.Template.Spec
	if pod.ServiceAccountName != "s-adapter-sync" {
		t.Errorf("serviceAccountName %q", pod.ServiceAccountName)
	}
	var sync *corev1.Container
	for i := range pod.Containers {
		if pod.Containers[i].Name == adaptersync.ContainerName {
			sync = &pod.Containers[i]
		}
		if pod.Containers[i].Name == loraSidecarContainer {
			t.Errorf("the chart's download sidecar runs beside the sync container")
		}
	}
	if sync == nil {
		t.Fatalf("no sync container in %v", pod.Containers)
	}
	if sync.Image != syncImage || !cmp.Equal(sync.Args, []string{"adapter-sync", "--config=/etc/adapters/adapters.json", "--engine=http://127.0.0.1:8000", "--dir=/data/lora-adapters"}) {
		t.Errorf("sync container image %q args %q", sync.Image, sync.Args)
	}
	if sync.Env[0].Name != "POD_NAME" || sync.Env[1].Name != "POD_NAMESPACE" || sync.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.name" {
		t.Errorf("sync env %v", sync.Env)
	}
	eng := pod.Containers[0]
	if !strings.Contains(strings.Join(eng.Args, " "), "--enable-lora") {
		t.Errorf("engine args %q", eng.Args)
	}
	if !containsEnv(eng.Env, "VLLM_ALLOW_RUNTIME_LORA_UPDATING", "True") {
		t.Errorf("engine env %v", eng.Env)
	}
	cm := desired(t, rsp, "engine-m-adapters", &corev1.ConfigMap{})
	if cm.Name != "s-m-lora-adapters" {
		t.Errorf("ConfigMap name %q", cm.Name)
	}
	want := `[{"name":"sql","source":{"huggingFace":{"repo":"org/sql-lora","revision":"v2"}}},{"name":"local","source":{"path":"/data/adapters/local"}}]`
	if got := cm.Data[adaptersync.ConfigKey]; got != want {
		t.Errorf("adapters.json:\n got %s\nwant %s", got, want)
	}
	var list []map[string]any
	if err := json.Unmarshal([]byte(cm.Data[adaptersync.ConfigKey]), &list); err != nil || len(list) != 2 {
		t.Errorf("adapters.json does not parse: %v", err)
	}
	role := desired(t, rsp, adapterSyncRoleKey, &rbacv1.Role{})
	if !cmp.Equal(role.Rules, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"patch"}}}) {
		t.Errorf("rules %v", role.Rules)
	}
	rb := desired(t, rsp, adapterSyncRoleBindingKey, &rbacv1.RoleBinding{})
	if len(rb.Subjects) != 1 || rb.Subjects[0].Name != "s-adapter-sync" || rb.RoleRef.Name != "s-adapter-sync" {
		t.Errorf("binding %+v", rb)
	}
	if _, ok := rsp.objects[adapterSyncServiceAccountKey]; !ok {
		t.Errorf("no ServiceAccount: %v", rsp.keys)
	}
	// The first reconcile waits for the Role before binding it.
	first := mustRun(t, req(t, adaptersXR(twoAdapters), syncInput, nil))
	if _, ok := first.objects[adapterSyncRoleBindingKey]; ok {
		t.Errorf("the RoleBinding is composed before its Role is observed")
	}
}

func containsEnv(env []corev1.EnvVar, name, value string) bool {
	for _, e := range env {
		if e.Name == name && e.Value == value {
			return true
		}
	}
	return false
}

// TestAdaptersDoNotRestartEngines is issue 31's test: two stacks that differ
// only in their adapters (none, some, changed) have byte-identical engine
// Deployments, so no engine restarts.
func TestAdaptersDoNotRestartEngines(t *testing.T) {
	variants := map[string][]any{
		"none": nil,
		"two":  twoAdapters,
		"changed": {
			map[string]any{"name": "sql", "huggingFace": map[string]any{"repo": "org/sql-lora", "revision": "v3"}},
			map[string]any{"name": "other", "huggingFace": map[string]any{"repo": "org/other"}},
		},
	}
	var first []byte
	var firstName string
	for name, adapters := range variants {
		rsp := reconciled(t, adaptersXR(adapters), syncInput)
		if rsp.refusal != "" {
			t.Fatalf("%s: %s", name, rsp.refusal)
		}
		b, err := json.Marshal(rsp.objects["engine-m"])
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first, firstName = b, name
			continue
		}
		if string(b) != string(first) {
			t.Errorf("the engine Deployment of %q differs from %q's:\n%s", name, firstName, cmp.Diff(string(first), string(b)))
		}
	}
}

// TestRuntimeAdaptersRefused: what runtime adapters cannot go with, each
// naming the field.
func TestRuntimeAdaptersRefused(t *testing.T) {
	for name, c := range map[string]struct {
		xr    map[string]any
		input map[string]any
		want  string
	}{
		"NoImage":       {adaptersXR(twoAdapters), nil, "the Composition's Input must set adapterSync.image"},
		"NoLoRA":        {adaptersXR(twoAdapters, "model.enableLoRA", false), syncInput, "spec.model.enableRuntimeAdapters needs enableLoRA: true"},
		"NoSwitch":      {adaptersXR(twoAdapters, "model.enableRuntimeAdapters", false), syncInput, "spec.model.adapters needs enableRuntimeAdapters: true"},
		"NoStorage":     {adaptersXR(twoAdapters, "storage.enabled", false), syncInput, "needs storage"},
		"APIServers":    {adaptersXR(twoAdapters, "vllmConfig.image", "vllm/vllm-openai:v0.12.0", "vllmConfig.extraArgs", []any{"--api-server-count=2"}), syncInput, "refuses runtime LoRA updating with more than one"},
		"MultiNode":     {adaptersXR(twoAdapters, "vllmConfig.image", "vllm/vllm-openai:v0.12.0", "multiNode", map[string]any{"podsPerReplica": 2}, "resources.gpu", "1", "vllmConfig.pipelineParallelSize", 2), syncInput, "enableRuntimeAdapters cannot be combined with multiNode"},
		"TwoSources":    {adaptersXR([]any{map[string]any{"name": "a", "path": "/data/a", "huggingFace": map[string]any{"repo": "o/a"}}}), syncInput, "spec.model.adapters[0]: give one source"},
		"NoSource":      {adaptersXR([]any{map[string]any{"name": "a"}}), syncInput, "spec.model.adapters[0]: give one source"},
		"SameName":      {adaptersXR([]any{map[string]any{"name": "a", "path": "/data/a"}, map[string]any{"name": "a", "path": "/data/b"}}), syncInput, `adapters[1].name "a" is already`},
		"ModelName":     {adaptersXR([]any{map[string]any{"name": "org/m", "path": "/data/a"}}), syncInput, "adapters[0].name"},
		"PathOffCache":  {adaptersXR([]any{map[string]any{"name": "a", "path": "/etc/a"}}), syncInput, "adapters[0].path"},
		"PathDotDot":    {adaptersXR([]any{map[string]any{"name": "a", "path": "/data/../etc"}}), syncInput, "adapters[0].path"},
		"BadRepo":       {adaptersXR([]any{map[string]any{"name": "a", "huggingFace": map[string]any{"repo": "a/b/c"}}}), syncInput, "adapters[0].huggingFace.repo"},
		"RankOneOld":    {with("model.enableLoRA", true, "vllmConfig.image", "vllm/vllm-openai:v0.11.0", "vllmConfig.maxLoraRank", 1), nil, "maxLoraRank 1 needs vLLM 0.12.0"},
		"CPUBelowLoras": {with("model.enableLoRA", true, "vllmConfig.maxLoras", 4, "vllmConfig.maxCpuLoras", 2), nil, "maxCpuLoras 2 is less than vllmConfig.maxLoras 4"},
	} {
		t.Run(name, func(t *testing.T) {
			got := fatal(t, run(t, req(t, c.xr, c.input, nil)))
			if !strings.Contains(got, c.want) {
				t.Errorf("refusal %q\nwant it to contain %q", got, c.want)
			}
		})
	}
}

// TestLoRALimits: the limits are rendered with LoRA on, for the release.
func TestLoRALimits(t *testing.T) {
	rsp := mustRun(t, req(t, with("model.enableLoRA", true, "vllmConfig.image", "vllm/vllm-openai:v0.12.0", "vllmConfig.maxLoraRank", 1, "vllmConfig.maxLoras", 2, "vllmConfig.maxCpuLoras", 4), nil, nil))
	args := strings.Join(engineContainer0(t, rsp, "engine-m").Args, " ")
	for _, want := range []string{"--max-loras=2", "--max-lora-rank=1", "--max-cpu-loras=4"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %s", args, want)
		}
	}
}

// TestRuntimeAdaptersServiceName: with service-name discovery the router
// does not see the pod's lora-modified bump, which the stack says; with
// pod-ip (the default) it says nothing.
func TestRuntimeAdaptersServiceName(t *testing.T) {
	want := "spec.model.enableRuntimeAdapters with routerConfig.k8sServiceDiscoveryType service-name: the router reads a Service's models only on an event of the Service, and the sync container marks the pod (lora-modified), so the router answers 404 for a new adapter until the Service changes; use pod-ip"
	for name, c := range map[string]struct {
		discovery string
		want      []string
	}{"ServiceName": {"service-name", []string{want}}, "PodIP": {"pod-ip", nil}} {
		t.Run(name, func(t *testing.T) {
			got := mustRun(t, req(t, adaptersXR(twoAdapters, "resources.gpu", "1", "routerConfig.k8sServiceDiscoveryType", c.discovery), syncInput, nil)).warnings
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRuntimeAdapterNamesAcrossModels: behind the router a runtime adapter
// may not be named like another model's served name, LoRA adapter or
// runtime adapter (the router sends a name to any engine listing it);
// behind the inference extension each model has its own route, so it may.
func TestRuntimeAdapterNamesAcrossModels(t *testing.T) {
	const want = `invalid ProductionStack: spec.models[0].adapters[0].name %q is also %s of spec.models[1]: the router sends a request to any engine that lists its model name, so this adapter's requests could reach the other model; names must be unique across the stack's models: rename the adapter`
	models := func(name string, b map[string]any) []any {
		a := map[string]any{"name": "a", "modelURL": "org/a", "enableLoRA": true, "enableRuntimeAdapters": true,
			"adapters": []any{map[string]any{"name": name, "path": "/data/x"}}}
		return []any{a, b}
	}
	for name, tc := range map[string]struct {
		adapter, what string
		other         map[string]any
	}{
		"ServedName":     {"gpt2", "the served name", map[string]any{"name": "b", "modelURL": "gpt2"}},
		"ServedNameSet":  {"bee", "the served name", map[string]any{"name": "b", "modelURL": "org/b", "servedModelName": "bee"}},
		"LoRAAdapter":    {"sql", "a LoRA adapter", map[string]any{"name": "b", "modelURL": "org/b", "enableLoRA": true, "loraAdapters": []any{map[string]any{"name": "sql", "path": "/data/sql"}}}},
		"RuntimeAdapter": {"sql", "a runtime adapter", map[string]any{"name": "b", "modelURL": "org/b", "enableLoRA": true, "enableRuntimeAdapters": true, "adapters": []any{map[string]any{"name": "sql", "path": "/data/sql"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			got := fatal(t, run(t, req(t, with("model", nil, "models", models(tc.adapter, tc.other)), syncInput, nil)))
			if w := fmt.Sprintf(want, tc.adapter, tc.what); !strings.HasPrefix(got, w) {
				t.Errorf("Fatal message:\n got: %s\nwant: %s", got, w)
			}
		})
	}
	mustRun(t, req(t, with("model", nil, "models", models("sql", map[string]any{"name": "b", "modelURL": "org/b"})), syncInput, nil))
	mustRun(t, req(t, gieXR("model", nil, "models", models("bee", map[string]any{"name": "b", "modelURL": "org/b", "servedModelName": "bee"})), syncInput, nil))
}
