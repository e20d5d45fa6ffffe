package stack

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/adaptersync"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/names"
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
		if pod.Containers[i].Name == build.LoRASidecarContainer {
			t.Errorf("the chart's download sidecar runs beside the sync container")
		}
	}
	if sync == nil {
		t.Fatalf("no sync container in %v", pod.Containers)
	}
	if sync.Image != syncImage || !cmp.Equal(sync.Args, []string{"adapter-sync", "--config=/etc/adapters/adapters.json", "--engine=http://127.0.0.1:8000", "--dir=/lora-adapters"}) {
		t.Errorf("sync container image %q args %q", sync.Image, sync.Args)
	}
	wantSC := &corev1.SecurityContext{
		RunAsUser: ptr.To[int64](65532), RunAsGroup: ptr.To[int64](65532), RunAsNonRoot: ptr.To(true),
		Privileged: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
		Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if !cmp.Equal(sync.SecurityContext, wantSC) {
		t.Errorf("sync container security context: %s", cmp.Diff(wantSC, sync.SecurityContext))
	}
	// The token is the sync container's alone; the model cache is
	// read-only to it, and it writes only its downloads, which vLLM reads.
	wantMounts := []corev1.VolumeMount{
		{Name: "adapter-sync-config", MountPath: "/etc/adapters", ReadOnly: true},
		{Name: "adapter-sync-token", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		{Name: "s-storage", MountPath: "/data", ReadOnly: true},
		{Name: "adapter-sync-downloads", MountPath: "/lora-adapters"},
	}
	if !cmp.Equal(sync.VolumeMounts, wantMounts) {
		t.Errorf("sync container mounts: %s", cmp.Diff(wantMounts, sync.VolumeMounts))
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Errorf("automountServiceAccountToken %v, want false", pod.AutomountServiceAccountToken)
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		for _, m := range c.VolumeMounts {
			if c.Name != adaptersync.ContainerName && (m.Name == adaptersync.TokenVolume || m.Name == adaptersync.ConfigVolume || strings.HasPrefix(m.MountPath, "/var/run/secrets")) {
				t.Errorf("container %s mounts %s at %s", c.Name, m.Name, m.MountPath)
			}
			if c.Name == build.EngineContainer && m.Name == adaptersync.DownloadVolume && (m.MountPath != "/lora-adapters" || !m.ReadOnly) {
				t.Errorf("the engine mounts the downloads %+v, want read-only at /lora-adapters", m)
			}
		}
	}
	if !slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool {
		return v.Name == adaptersync.DownloadVolume && v.EmptyDir != nil
	}) {
		t.Errorf("no emptyDir %s in %v", adaptersync.DownloadVolume, pod.Volumes)
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
	role := desired(t, rsp, names.AdapterSyncRoleKey, &rbacv1.Role{})
	if !cmp.Equal(role.Rules, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"patch"}}}) {
		t.Errorf("rules %v", role.Rules)
	}
	rb := desired(t, rsp, names.AdapterSyncRoleBindingKey, &rbacv1.RoleBinding{})
	if len(rb.Subjects) != 1 || rb.Subjects[0].Name != "s-adapter-sync" || rb.RoleRef.Name != "s-adapter-sync" {
		t.Errorf("binding %+v", rb)
	}
	if _, ok := rsp.objects[names.AdapterSyncServiceAccountKey]; !ok {
		t.Errorf("no ServiceAccount: %v", rsp.keys)
	}
	// The first reconcile waits for the Role before binding it.
	first := mustRun(t, req(t, adaptersXR(twoAdapters), syncInput, nil))
	if _, ok := first.objects[names.AdapterSyncRoleBindingKey]; ok {
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

// TestSyncIdentityRefused: the sync container runs as the stack's own
// ServiceAccount, whose token reaches no other container, wherever the pod
// setting is written (the engine's block, the top-level block of models[],
// a models[] item), and no other container mounts its volumes.
func TestSyncIdentityRefused(t *testing.T) {
	items := func(kv ...any) map[string]any {
		item := map[string]any{"name": "m", "modelURL": "org/m", "enableLoRA": true, "enableRuntimeAdapters": true, "adapters": twoAdapters}
		for i := 0; i < len(kv); i += 2 {
			item[kv[i].(string)] = kv[i+1]
		}
		return with("model", nil, "models", []any{item})
	}
	const saFix = `cannot be combined with %s.enableRuntimeAdapters: the engine pods run as the stack's ServiceAccount "s-adapter-sync", the only identity the adapter sync RoleBinding grants and the admission policy function-vllm-stack-adapter-sync confines to its own pod's annotations; remove serviceAccountName, or turn enableRuntimeAdapters off`
	const tokenFix = `: true cannot be combined with %s.enableRuntimeAdapters: it would mount the adapter sync identity's token into every container of the engine pod (vLLM, sidecars, init containers), not only the sync container, which gets its own; remove automountServiceAccountToken`
	mountFix := func(name, what string) string {
		return `mounts volume "` + name + `", the adapter sync container's ` + what + `, which no other container may mount (the token is the sync identity's, the rest only the sync container reads or writes); remove the mount`
	}
	initMount := map[string]any{"name": "i", "image": "busybox", "volumeMounts": []any{map[string]any{"name": "adapter-sync-token", "mountPath": "/t"}}}
	for name, c := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"ServiceAccount":            {adaptersXR(twoAdapters, "pod.serviceAccountName", "default"), `spec.pod.serviceAccountName "default" ` + fmt.Sprintf(saFix, "spec.model")},
		"ServiceAccountTop":         {items(), ""},
		"ServiceAccountModelsTop":   {withKV(items(), "pod.serviceAccountName", "picker"), `spec.pod.serviceAccountName "picker" ` + fmt.Sprintf(saFix, "spec.models[0]")},
		"ServiceAccountModelsItem":  {items("pod", map[string]any{"serviceAccountName": "picker"}), `spec.models[0].pod.serviceAccountName "picker" ` + fmt.Sprintf(saFix, "spec.models[0]")},
		"Automount":                 {adaptersXR(twoAdapters, "pod.automountServiceAccountToken", true), "spec.pod.automountServiceAccountToken" + fmt.Sprintf(tokenFix, "spec.model")},
		"AutomountModelsItem":       {items("pod", map[string]any{"automountServiceAccountToken": true}), "spec.models[0].pod.automountServiceAccountToken" + fmt.Sprintf(tokenFix, "spec.models[0]")},
		"AutomountModelsTop":        {withKV(items(), "pod.automountServiceAccountToken", true), "spec.pod.automountServiceAccountToken" + fmt.Sprintf(tokenFix, "spec.models[0]")},
		"MountToken":                {adaptersXR(twoAdapters, "storage.extraVolumeMounts", []any{map[string]any{"name": "adapter-sync-token", "mountPath": "/t"}}), "spec: storage.extraVolumeMounts[0] " + mountFix("adapter-sync-token", "token")},
		"MountConfig":               {adaptersXR(twoAdapters, "storage.extraVolumeMounts", []any{map[string]any{"name": "adapter-sync-config", "mountPath": "/c"}}), "spec: storage.extraVolumeMounts[0] " + mountFix("adapter-sync-config", "configuration")},
		"MountDownloads":            {adaptersXR(twoAdapters, "storage.extraVolumeMounts", []any{map[string]any{"name": "adapter-sync-downloads", "mountPath": "/d"}}), "spec: storage.extraVolumeMounts[0] " + mountFix("adapter-sync-downloads", "downloads")},
		"InitContainerMountsToken":  {adaptersXR(twoAdapters, "pod.initContainers", []any{initMount}), "spec: pod.initContainers[0].volumeMounts[0] " + mountFix("adapter-sync-token", "token")},
		"RouterAccountLikeSync":     {adaptersXR(twoAdapters, "routerConfig.serviceAccountName", "x-adapter-sync"), `spec.routerConfig.serviceAccountName "x-adapter-sync" ends in "-adapter-sync", which the admission policy function-vllm-stack-adapter-sync reserves for the adapter sync identity (it may change only its own pod's two annotations): choose another name`},
		"ExtraVolumeNamedLikeToken": {adaptersXR(twoAdapters, "storage.extraVolumes", []any{map[string]any{"name": "adapter-sync-token", "emptyDir": map[string]any{}}}), `spec: storage.extraVolumes[0].name "adapter-sync-token" is the name of the token volume of the adapter sync container: choose another name`},
	} {
		t.Run(name, func(t *testing.T) {
			rsp := run(t, req(t, c.xr, syncInput, nil))
			if c.want == "" {
				if rsp.refusal != "" {
					t.Fatalf("refused: %s", rsp.refusal)
				}
				return
			}
			if got := fatal(t, rsp); !strings.Contains(got, c.want) {
				t.Errorf("refusal %q\nwant it to contain %q", got, c.want)
			}
		})
	}
}

// withKV sets dotted keys of the spec of xr.
func withKV(xr map[string]any, kv ...any) map[string]any {
	spec := xr["spec"].(map[string]any)
	for i := 0; i < len(kv); i += 2 {
		m := spec
		parts := strings.Split(kv[i].(string), ".")
		for _, p := range parts[:len(parts)-1] {
			if _, ok := m[p].(map[string]any); !ok {
				m[p] = map[string]any{}
			}
			m = m[p].(map[string]any)
		}
		m[parts[len(parts)-1]] = kv[i+1]
	}
	return xr
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

// TestSyncServiceAccountSuffix: the admission policy selects the sync
// identity by its ServiceAccount's suffix, which even the longest stack name
// (a DNS label of 63) keeps.
func TestSyncServiceAccountSuffix(t *testing.T) {
	for _, stack := range []string{"s", strings.Repeat("a", 63)} {
		got := names.Names{Stack: stack}.AdapterSyncServiceAccount()
		if !strings.HasSuffix(got, adaptersync.ServiceAccountSuffix) || got != stack+"-adapter-sync" || len(got) > names.MaxSubdomainLength {
			t.Errorf("stack %q: ServiceAccount %q", stack, got)
		}
	}
}
