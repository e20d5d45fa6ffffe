package stack

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
)

// TestKVOffloadRender: example/stacks/kv-offload.yaml renders the CPU tier
// alone as vLLM's own flags, and the CPU tier over a claim as the
// OffloadingConnector's tiering spec with the claim mounted at its root,
// PYTHONHASHSEED fixed and /dev/shm grown by the tier (kvoffload.tsv).
func TestKVOffloadRender(t *testing.T) {
	rsp := mustRun(t, req(t, stacktest.LoadXR(t, "../example/stacks/kv-offload.yaml", ""), nil, nil))
	chat := desired(t, rsp, "engine-chat", &appsv1.Deployment{}).Spec.Template.Spec
	docs := desired(t, rsp, "engine-docs", &appsv1.Deployment{}).Spec.Template.Spec
	args := func(p corev1.PodSpec) []string {
		return slices.DeleteFunc(slices.Clone(p.Containers[0].Args), func(a string) bool { return !strings.HasPrefix(a, "--kv") })
	}
	if diff := cmp.Diff([]string{"--kv-offloading-size=32", "--kv-offloading-backend=native"}, args(chat)); diff != "" {
		t.Errorf("chat's KV arguments (-want +got):\n%s", diff)
	}
	want := `--kv-transfer-config={"kv_connector":"OffloadingConnector","kv_role":"kv_both","kv_connector_extra_config":{"spec_name":"TieringOffloadingSpec","cpu_bytes_to_use":51539607552,"secondary_tiers":[{"type":"fs","root_dir":"/kv-offload"}]}}`
	if diff := cmp.Diff([]string{want}, args(docs)); diff != "" {
		t.Errorf("docs' KV arguments (-want +got):\n%s", diff)
	}
	seed := func(p corev1.PodSpec) string {
		for _, e := range p.Containers[0].Env {
			if e.Name == "PYTHONHASHSEED" {
				return e.Value
			}
		}
		return ""
	}
	if seed(chat) != "" || seed(docs) != "0" {
		t.Errorf("PYTHONHASHSEED chat %q docs %q, want none (one process) and 0 (a shared tier)", seed(chat), seed(docs))
	}
	vol := func(p corev1.PodSpec, name string) *corev1.Volume {
		for i := range p.Volumes {
			if p.Volumes[i].Name == name {
				return &p.Volumes[i]
			}
		}
		return nil
	}
	// shmSize's default 20Gi plus the tier: vLLM from 0.20.0 maps it in /dev/shm.
	for _, tc := range []struct {
		p    corev1.PodSpec
		want string
	}{{chat, "52Gi"}, {docs, "68Gi"}} {
		if v := vol(tc.p, "shm"); v == nil || v.EmptyDir.SizeLimit.Cmp(resource.MustParse(tc.want)) != 0 {
			t.Errorf("/dev/shm %v, want %s", v, tc.want)
		}
	}
	if v := vol(chat, "kv-offload"); v != nil {
		t.Errorf("chat has no filesystem tier, got volume %v", v)
	}
	if v := vol(docs, "kv-offload"); v == nil || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "offload-docs-kv-offload" {
		t.Errorf("docs' kv-offload volume %v, want the claim offload-docs-kv-offload", v)
	}
	if !slices.Contains(docs.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "kv-offload", MountPath: "/kv-offload"}) {
		t.Errorf("docs does not mount kv-offload at /kv-offload: %v", docs.Containers[0].VolumeMounts)
	}
	pvc := desired(t, rsp, "engine-docs-kv-offload", &corev1.PersistentVolumeClaim{})
	if got := pvc.Spec.AccessModes; !slices.Equal(got, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}) {
		t.Errorf("claim access modes %v, want [ReadWriteMany]", got)
	}
	if got := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; got.String() != "500Gi" || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "shared-rwx" {
		t.Errorf("claim size %s class %v, want 500Gi shared-rwx", got.String(), pvc.Spec.StorageClassName)
	}
	if _, ok := rsp.objects["engine-chat-kv-offload"]; ok {
		t.Errorf("chat has no filesystem tier, yet a claim")
	}
}

// TestKVOffloadShmBeforeItsRelease: before vLLM 0.20.0 the CPU tier is not
// in /dev/shm, which the pod then does not mount for it (0.16.0, the first
// release whose native CPU tier starts).
func TestKVOffloadShmBeforeItsRelease(t *testing.T) {
	rsp := mustRun(t, req(t, with("vllmConfig.engineVersion", "0.16.0", "resources.memory", "64Gi", "kvOffloading.cpu", "8Gi"), nil, nil))
	p := desired(t, rsp, "engine-m", &appsv1.Deployment{}).Spec.Template.Spec
	if slices.ContainsFunc(p.Volumes, func(v corev1.Volume) bool { return v.Name == "shm" }) {
		t.Errorf("vLLM 0.16.0 pins the tier in plain memory: no /dev/shm for it, got %v", p.Volumes)
	}
}

// TestKVOffloadRefused: each combination the facts rule out is refused with
// the field, the release or the arithmetic, and the fix.
func TestKVOffloadRefused(t *testing.T) {
	claim := map[string]any{"persistentVolumeClaim": map[string]any{"size": "100Gi"}}
	for name, tc := range map[string]struct {
		kv   []any
		want string
	}{
		"Before0111": {kv: []any{"vllmConfig.engineVersion", "0.11.0", "kvOffloading.cpu", "8Gi"},
			want: "spec: kvOffloading needs vLLM 0.16.0 or later (--kv-offloading-size and the OffloadingConnector's CPU tier sized in bytes, vLLM PRs #27621 and #24498), and the engine runs vLLM 0.11.0 (vllmConfig.engineVersion 0.11.0): use a newer image or LMCache (lmcacheConfig)"},
		"Before0160": {kv: []any{"vllmConfig.engineVersion", "0.12.0", "kvOffloading.cpu", "8Gi"},
			want: `spec: kvOffloading needs vLLM 0.16.0 or later, and the engine runs vLLM 0.12.0 (vllmConfig.engineVersion 0.12.0), whose --kv-offloading-size hands the OffloadingConnector num_cpu_blocks 0, which it refuses at start ("num_cpu_blocks must be specified"; sized in bytes from vLLM PR #24498): use a newer image or LMCache (lmcacheConfig)`},
		"FSBefore0230": {kv: []any{"vllmConfig.engineVersion", "0.22.0", "kvOffloading.cpu", "8Gi", "kvOffloading.fileSystem", claim},
			want: "spec.kvOffloading.fileSystem needs vLLM 0.23.0 or later (TieringOffloadingSpec with its secondary tier of type fs; 0.22.0 was cut while the tier was renamed from fs_python), and the engine runs vLLM 0.22.0 (vllmConfig.engineVersion 0.22.0): use a newer image, or the CPU tier alone"},
		"WithLMCache": {kv: []any{"kvOffloading.cpu", "8Gi", "lmcacheConfig.enabled", true},
			want: "spec: kvOffloading and lmcacheConfig.enabled each need vLLM's one KV connector (OffloadingConnector, LMCacheConnectorV1), and --kv-offloading-size replaces any other: use one of them"},
		"MemoryRequest": {kv: []any{"kvOffloading.cpu", "40Gi", "resources.memory", "32Gi"},
			want: "spec: kvOffloading.cpu 40Gi must be less than resources.memory 32Gi (40 GiB ≥ 32 GiB): the CPU tier lives in the engine pod's memory beside vLLM itself; raise resources.memory or lower kvOffloading.cpu"},
		"MemoryLimit": {kv: []any{"kvOffloading.cpu", "40Gi", "resources.memory", "48Gi", "resources.memoryLimit", "40Gi"},
			want: "spec: kvOffloading.cpu 40Gi must be less than resources.memoryLimit 40Gi (40 GiB ≥ 40 GiB): the CPU tier lives in the engine pod's memory beside vLLM itself; raise resources.memoryLimit or lower kvOffloading.cpu"},
		"NotASize": {kv: []any{"kvOffloading.cpu", "lots"},
			want: `spec.kvOffloading.cpu "lots" is not a size: use a quantity such as 40Gi or a number of GiB`},
		"SharedRWO": {kv: []any{"replicas", 2, "kvOffloading.cpu", "8Gi", "kvOffloading.fileSystem", map[string]any{"persistentVolumeClaim": map[string]any{"size": "100Gi", "accessModes": []any{"ReadWriteOnce"}}}},
			want: "spec.kvOffloading.fileSystem.persistentVolumeClaim.accessModes [ReadWriteOnce]: its 2 replicas share the claim, on any node: use [ReadWriteMany]"},
		"NoClaimSize": {kv: []any{"kvOffloading.cpu", "8Gi", "kvOffloading.fileSystem", map[string]any{"persistentVolumeClaim": map[string]any{"storageClassName": "x"}}},
			want: "spec.kvOffloading.fileSystem.persistentVolumeClaim.size is required for the claim the stack creates: set it (e.g. 500Gi), or name an existing claim in claimName"},
		"TransferConfigInExtraArgs": {kv: []any{"kvOffloading.cpu", "8Gi", "vllmConfig.extraArgs", []any{`--kv-transfer-config={"kv_connector":"NixlConnector","kv_role":"kv_both"}`}},
			want: `spec.vllmConfig.extraArgs[0] "--kv-transfer-config={\"kv_connector\":\"NixlConnector\",\"kv_role\":\"kv_both\"}": spec.kvOffloading sets vLLM's KV connector, and vLLM runs one, which --kv-transfer-config replaces: remove it`},
		"SizeInExtraArgsWithLMCache": {kv: []any{"lmcacheConfig.enabled", true, "vllmConfig.extraArgs", []any{"--kv-offloading-size", "8"}},
			want: `spec.vllmConfig.extraArgs[0] "--kv-offloading-size": spec.lmcacheConfig.enabled sets vLLM's KV connector, and vLLM runs one, which --kv-offloading-size replaces: remove it`},
		"SizeInExtraArgs": {kv: []any{"kvOffloading.cpu", "8Gi", "vllmConfig.extraArgs", []any{"--kv-offloading-size=16"}},
			want: `spec.vllmConfig.extraArgs[0] "--kv-offloading-size=16" is refused: spec.kvOffloading.cpu sets --kv-offloading-size; set it there, not in extraArgs`},
	} {
		t.Run(name, func(t *testing.T) {
			got := refusal(t, with(tc.kv...))
			if !strings.Contains(got, tc.want) {
				t.Errorf("refusal\n%s\nwant it to hold\n%s", got, tc.want)
			}
		})
	}
}

// TestKVOffloadRefusedWithPD: a disaggregated model's groups run the
// transfer's connector, which --kv-offloading-size would replace.
func TestKVOffloadRefusedWithPD(t *testing.T) {
	got := refusal(t, pdXR("kvOffloading.cpu", "8Gi"))
	want := "kvOffloading and disaggregation each need vLLM's one KV connector (OffloadingConnector, and the transfer's NixlConnector or LMCache's), and --kv-offloading-size replaces any other: turn one of them off"
	if !strings.Contains(got, want) {
		t.Errorf("refusal\n%s\nwant it to hold\n%s", got, want)
	}
}

// TestKVOffloadPerModel: a model's kvOffloading overrides the top level's
// field by field, and errors name the block that set the field.
func TestKVOffloadPerModel(t *testing.T) {
	xr := with("model", nil, "kvOffloading.cpu", "8Gi", "resources.memory", "16Gi",
		"models", []any{
			map[string]any{"name": "a", "modelURL": "org/a"},
			map[string]any{"name": "b", "modelURL": "org/b", "kvOffloading": map[string]any{"cpu": "24Gi"}},
		})
	got := refusal(t, xr)
	want := "spec.models[1]: kvOffloading.cpu 24Gi must be less than resources.memory 16Gi (24 GiB ≥ 16 GiB)"
	if !strings.Contains(got, want) || strings.Contains(got, "spec.models[0]") {
		t.Errorf("refusal\n%s\nwant only model b, with\n%s", got, want)
	}
}

// TestKVOffloadWarnings: what works but will hurt.
func TestKVOffloadWarnings(t *testing.T) {
	for name, tc := range map[string]struct {
		kv   []any
		want string
	}{
		"NoMemoryRequest": {kv: []any{"kvOffloading.cpu", "8Gi"},
			want: "spec: kvOffloading.cpu 8Gi lives in the engine pod's memory, and resources.memory is unset: request more than it, so the pod lands on a node that has it"},
		"EmptyDirGrows": {kv: []any{"resources.memory", "32Gi", "kvOffloading.cpu", "8Gi", "kvOffloading.fileSystem", map[string]any{"emptyDir": map[string]any{"sizeLimit": "200Gi"}}},
			want: "spec.kvOffloading.fileSystem.emptyDir: vLLM's filesystem tier deletes no block it wrote (vllm/v1/kv_offload/tiering/fs), so the directory only grows: past its sizeLimit the kubelet evicts the pod, and without one it fills the node's disk; a persistentVolumeClaim ends in failed writes instead"},
		"SmallClaim": {kv: []any{"resources.memory", "32Gi", "kvOffloading.cpu", "8Gi", "kvOffloading.fileSystem", map[string]any{"persistentVolumeClaim": map[string]any{"size": "4Gi"}}},
			want: "spec.kvOffloading.fileSystem.persistentVolumeClaim.size 4Gi is not larger than kvOffloading.cpu 8Gi (4 GiB ≤ 8 GiB): every block reaches the filesystem tier through the CPU tier, so a smaller one holds little the CPU tier does not; make it larger"},
		"MultiNodeShare": {kv: []any{"vllmConfig.tensorParallelSize", 2, "resources.gpu", "1", "multiNode.podsPerReplica", 2, "storage.enabled", false, "kvOffloading.cpu", "16Gi"},
			want: "spec: kvOffloading.cpu 16Gi over 2 pods is 8 GiB per pod, which lives in the engine pod's memory, and resources.memory is unset"},
	} {
		t.Run(name, func(t *testing.T) {
			rsp := mustRun(t, req(t, with(tc.kv...), nil, nil))
			if !slices.ContainsFunc(rsp.warnings, func(w string) bool { return strings.Contains(w, tc.want) }) {
				t.Errorf("warnings %q\nwant one holding %q", rsp.warnings, tc.want)
			}
		})
	}
}

// TestKVOffloadTierOverride: a model's claim replaces the top level's
// emptyDir (the blocks merge field by field, the tier's kind is the last
// layer's), and the other model keeps the emptyDir.
func TestKVOffloadTierOverride(t *testing.T) {
	xr := with("model", nil, "resources.memory", "32Gi",
		"kvOffloading", map[string]any{"cpu": "8Gi", "fileSystem": map[string]any{"emptyDir": map[string]any{"sizeLimit": "100Gi"}}},
		"models", []any{
			map[string]any{"name": "a", "modelURL": "org/a"},
			map[string]any{"name": "b", "modelURL": "org/b", "kvOffloading": map[string]any{"cpu": "8Gi", "fileSystem": map[string]any{"persistentVolumeClaim": map[string]any{"claimName": "kv-b"}}}},
		})
	rsp := mustRun(t, req(t, xr, nil, nil))
	tier := func(key string) corev1.VolumeSource {
		for _, v := range desired(t, rsp, key, &appsv1.Deployment{}).Spec.Template.Spec.Volumes {
			if v.Name == "kv-offload" {
				return v.VolumeSource
			}
		}
		t.Fatalf("%s has no kv-offload volume", key)
		return corev1.VolumeSource{}
	}
	if a := tier("engine-a"); a.EmptyDir == nil || a.EmptyDir.SizeLimit.String() != "100Gi" {
		t.Errorf("model a's tier %+v, want the top level's emptyDir of 100Gi", a)
	}
	if b := tier("engine-b"); b.PersistentVolumeClaim == nil || b.PersistentVolumeClaim.ClaimName != "kv-b" || b.EmptyDir != nil {
		t.Errorf("model b's tier %+v, want its claim kv-b alone", b)
	}
}

// TestKVOffloadCPUFromTopLevel: a model may set only its filesystem tier
// over the top level's CPU tier; without a CPU tier anywhere the model is
// refused, naming its block.
func TestKVOffloadCPUFromTopLevel(t *testing.T) {
	tier := map[string]any{"fileSystem": map[string]any{"persistentVolumeClaim": map[string]any{"size": "100Gi"}}}
	models := []any{
		map[string]any{"name": "a", "modelURL": "org/a"},
		map[string]any{"name": "b", "modelURL": "org/b", "kvOffloading": tier},
	}
	rsp := mustRun(t, req(t, with("model", nil, "resources.memory", "32Gi", "kvOffloading.cpu", "8Gi", "models", models), nil, nil))
	if _, ok := rsp.objects["engine-b-kv-offload"]; !ok {
		t.Errorf("model b's tier claim is missing: %v", keys(rsp))
	}
	got := refusal(t, with("model", nil, "resources.memory", "32Gi", "models", models))
	want := "spec.models[1]: kvOffloading.cpu is required: every block reaches the other tiers through the CPU tier; set its size, e.g. cpu: 40Gi, here or at the top level"
	if !strings.Contains(got, want) || strings.Contains(got, "spec.models[0]") {
		t.Errorf("refusal\n%s\nwant only model b, with\n%s", got, want)
	}
}

// TestKVOffloadExpandableSegments: the CPU tier alone is a KV connector too
// (--kv-offloading-size sets it before vLLM 0.22.0's check), so
// expandable_segments:True is refused with it.
func TestKVOffloadExpandableSegments(t *testing.T) {
	got := refusal(t, with("vllmConfig.engineVersion", "0.22.0", "resources.memory", "32Gi", "kvOffloading.cpu", "8Gi",
		"env", []any{map[string]any{"name": "PYTORCH_CUDA_ALLOC_CONF", "value": "expandable_segments:True"}}))
	want := `spec.env PYTORCH_CUDA_ALLOC_CONF "expandable_segments:True": vLLM 0.22.0 and later refuse to start with a KV connector`
	if !strings.Contains(got, want) {
		t.Errorf("refusal\n%s\nwant it to hold\n%s", got, want)
	}
}

// TestKVOffloadDataParallel: each data-parallel rank is an engine of its
// own with a whole CPU tier (vLLM splits a tier over one engine's tensor-
// and pipeline-parallel workers only), so a pod holds kvOffloading.cpu once
// per local rank: its /dev/shm grows by that, and its memory must exceed it.
// A multi-node replica without data parallelism splits its one tier over
// its pods.
func TestKVOffloadDataParallel(t *testing.T) {
	shm := func(p corev1.PodSpec) string {
		for _, v := range p.Volumes {
			if v.Name == "shm" && v.EmptyDir != nil && v.EmptyDir.SizeLimit != nil {
				return v.EmptyDir.SizeLimit.String()
			}
		}
		return ""
	}
	// One pod, four ranks: 4 × 16Gi, over the default 20Gi.
	onePod := mustRun(t, req(t, with("vllmConfig.image", "vllm/vllm-openai:v0.27.1", "vllmConfig.dataParallelSize", 4, "resources.gpu", "4",
		"resources.memory", "96Gi", "kvOffloading.cpu", "16Gi"), nil, nil))
	if got := shm(desired(t, onePod, "engine-m", &appsv1.Deployment{}).Spec.Template.Spec); got != "84Gi" {
		t.Errorf("one pod of 4 data-parallel ranks: /dev/shm %s, want 84Gi (20Gi + 4 × 16Gi)", got)
	}
	// A group of two pods, eight ranks each: 8 × 4Gi per pod.
	group := reconciled(t, wideEPXR("0.27.1", "resources.memory", "256Gi", "kvOffloading.cpu", "4Gi"), nil)
	if group.refusal != "" {
		t.Fatal(group.refusal)
	}
	tpl := desired(t, group, "engine-m-leaderworkerset", &lwsv1.LeaderWorkerSet{}).Spec.LeaderWorkerTemplate
	for who, p := range map[string]corev1.PodSpec{"leader": tpl.LeaderTemplate.Spec, "worker": tpl.WorkerTemplate.Spec} {
		if got := shm(p); got != "52Gi" {
			t.Errorf("the %s of a group with 8 local ranks: /dev/shm %s, want 52Gi (20Gi + 8 × 4Gi)", who, got)
		}
	}
	const want = "spec: kvOffloading.cpu 32Gi for each of the pod's 4 data-parallel ranks is 128 GiB per pod, which must be less than resources.memory 96Gi (128 GiB ≥ 96 GiB): the CPU tier lives in the engine pod's memory beside vLLM itself; raise resources.memory or lower kvOffloading.cpu"
	got := refusal(t, with("vllmConfig.image", "vllm/vllm-openai:v0.27.1", "vllmConfig.dataParallelSize", 4, "resources.gpu", "4",
		"resources.memory", "96Gi", "kvOffloading.cpu", "32Gi"))
	if !strings.Contains(got, want) {
		t.Errorf("refusal\n%s\nwant it to hold\n%s", got, want)
	}
}
