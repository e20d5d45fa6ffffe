package stack

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/vllm-project/function-vllm-stack/input/v1beta1"
	"github.com/vllm-project/function-vllm-stack/internal/stacktest"
	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// prefetchXR is minimalXR with its cache filled by a Job.
func prefetchXR(kv ...any) map[string]any {
	return with(append([]any{"storage", map[string]any{"accessModes": []any{"ReadWriteMany"}, "prefetch": map[string]any{}}}, kv...)...)
}

func fillJobOf(t *testing.T, rsp response, prefix string) (string, *batchv1.Job) {
	t.Helper()
	for _, k := range rsp.keys {
		if strings.HasPrefix(k, prefix) {
			return k, desired(t, rsp, k, &batchv1.Job{})
		}
	}
	t.Fatalf("no key %s* in %v", prefix, rsp.keys)
	return "", nil
}

// TestPrefetchJob (issue 43): the fill Job runs the engine's image with
// huggingface_hub's Python API (the model and revision as argv items), the
// token and HF_HOME as the engines have them, on the claim, where the
// engines are scheduled, under labels nothing that routes selects; a
// disaggregated model on one ReadWriteMany claim gets one Job, on two
// claims one each.
func TestPrefetchJob(t *testing.T) {
	rsp := mustRun(t, req(t, prefetchXR("model.revision", "abc", "vllmConfig.hfTokenSecret", map[string]any{"name": "hf"},
		"scheduling", map[string]any{"nodeSelector": map[string]any{"gpu": "h100"}}), nil, nil))
	key, job := fillJobOf(t, rsp, "engine-m-fill-")
	if !strings.HasPrefix(job.Name, "s-m-fill-") || job.Name != "s-m-fill-"+strings.TrimPrefix(key, "engine-m-fill-") {
		t.Errorf("Job %s under key %s", job.Name, key)
	}
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	if c.Image != "docker.io/vllm/vllm-openai:latest" || len(c.Command) != 5 || c.Command[0] != "python3" || c.Command[3] != "org/m" || c.Command[4] != "abc" {
		t.Errorf("fill container %s %q", c.Image, c.Command)
	}
	wantEnv := []corev1.EnvVar{{Name: "HF_HOME", Value: "/data"}, {Name: "HF_TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "hf"}, Key: "token"}}}}
	if diff := cmp.Diff(wantEnv, c.Env); diff != "" {
		t.Errorf("fill env (-want +got):\n%s", diff)
	}
	if pod.RestartPolicy != corev1.RestartPolicyNever || *job.Spec.BackoffLimit != 3 || pod.NodeSelector["gpu"] != "h100" || ptr.Deref(pod.AutomountServiceAccountToken, true) {
		t.Errorf("fill pod: restart %s, backoff %d, nodeSelector %v, token %v", pod.RestartPolicy, *job.Spec.BackoffLimit, pod.NodeSelector, pod.AutomountServiceAccountToken)
	}
	if l := job.Spec.Template.Labels; l["app.kubernetes.io/component"] != "model-cache" || l["model"] != "" {
		t.Errorf("fill pod labels %v: want component model-cache and no model label", l)
	}
	if r := job.Spec.PodFailurePolicy.Rules[0]; r.Action != batchv1.PodFailurePolicyActionFailJob || !slices.Equal(r.OnExitCodes.Values, []int32{10, 11, 12, 13}) || *r.OnExitCodes.ContainerName != "fill" {
		t.Errorf("podFailurePolicy %+v: want FailJob on the fill program's exit codes 10-13", job.Spec.PodFailurePolicy)
	}
	if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("fill terminationMessagePolicy %q", c.TerminationMessagePolicy)
	}

	// The engine's HF_HUB_OFFLINE once composed is TestPrefetchSequence's
	// (fn); here: a changed revision is another key.
	key2, _ := fillJobOf(t, mustRun(t, req(t, prefetchXR("model.revision", "def"), nil, nil)), "engine-m-fill-")
	if key2 == key {
		t.Errorf("revisions abc and def share the key %s", key)
	}

	// Disaggregated: one claim (ReadWriteMany, shared) is one Job; two
	// claims (ReadWriteOnce) two.
	shared := mustRun(t, req(t, pdXR("storage", map[string]any{"accessModes": []any{"ReadWriteMany"}, "prefetch": map[string]any{}}), nil, nil))
	fillJobOf(t, shared, "engine-m-fill-")
	perGroup := mustRun(t, req(t, pdXR("storage", map[string]any{"prefetch": map[string]any{}}), nil, nil))
	fillJobOf(t, perGroup, "engine-m-prefill-fill-")
	fillJobOf(t, perGroup, "engine-m-decode-fill-")
}

// TestPrefetchRefusals: where a Job cannot fill the cache once for every
// engine pod, or the engines reading offline would need to download more.
func TestPrefetchRefusals(t *testing.T) {
	const prefix = "invalid ProductionStack: "
	for name, tc := range map[string]struct {
		xr   map[string]any
		want string
	}{
		"StorageOff": {xr: with("storage", map[string]any{"enabled": false, "prefetch": map[string]any{}}),
			want: "spec.storage.prefetch needs the model cache, and storage is disabled: enable storage or remove prefetch"},
		"EmptyDir": {xr: with("storage", map[string]any{"emptyDir": map[string]any{}, "prefetch": map[string]any{}}),
			want: "spec.storage.prefetch cannot fill storage.emptyDir: an emptyDir belongs to one pod, so each engine pod downloads its own copy; use a claim or remove prefetch"},
		"ExistingClaim": {xr: with("storage", map[string]any{"existingClaimName": "models", "prefetch": map[string]any{}}),
			want: `spec.storage.prefetch cannot fill storage.existingClaimName "models": an existing claim is used as it is; fill it yourself, or remove existingClaimName so the stack makes the claim it fills`},
		"LocalPath": {xr: prefetchXR("model.path", "/models/m"),
			want: `spec.storage.prefetch has nothing to download: spec.model.path "/models/m" is read from the pod's volumes; remove prefetch`},
		"PathURL": {xr: prefetchXR("model.modelURL", "/models/m"),
			want: `spec.storage.prefetch has nothing to download: spec.model.modelURL "/models/m" is a path, read from the pod's volumes; remove prefetch`},
		"ObjectStore": {xr: prefetchXR("model.modelURL", "s3://bucket/m"),
			want: `spec.storage.prefetch downloads from the Hugging Face Hub only, and spec.model.modelURL "s3://bucket/m" is loaded by vLLM itself from where it points, at every start; remove prefetch`},
		"HubAdapter": {xr: prefetchXR("model.enableLoRA", true, "model.loraAdapters", []any{map[string]any{"name": "a", "path": "org/adapter"}}),
			want: `spec.storage.prefetch: the engines read the cache offline (HF_HUB_OFFLINE=1), so spec.model.loraAdapters[0].path "org/adapter", a Hugging Face repository, cannot be downloaded by them: use an absolute path or remove prefetch`},
	} {
		t.Run(name, func(t *testing.T) {
			if got := refusal(t, tc.xr); got != prefix+tc.want {
				t.Errorf("refusal:\n got: %s\nwant: %s", got, prefix+tc.want)
			}
		})
	}
	if got := refusal(t, prefetchXR("storage.prefetch.enabled", false, "model.path", "/models/m")); got != "" {
		t.Errorf("prefetch disabled is refused: %s", got)
	}
}

// TestFillProgram runs the fill Job's program with python3 against a
// stand-in huggingface_hub (the API and error classes it uses, as
// huggingface_hub 0.30.0 to 1.28.0 define them: MODEL-LIFE.md): the weight
// formats it leaves out, and the exit code of each failure a retry cannot
// mend (the Job's podFailurePolicy), a network error left to retries. It
// skips where python3 is not installed.
func TestFillProgram(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	_, job := fillJobOf(t, mustRun(t, req(t, prefetchXR(), nil, nil)), "engine-m-fill-")
	command := job.Spec.Template.Spec.Containers[0].Command
	hub := filepath.Join(t.TempDir(), "huggingface_hub")
	if err := os.MkdirAll(hub, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"errors.py": `class HfHubHTTPError(Exception): pass
class RepositoryNotFoundError(HfHubHTTPError): pass
class GatedRepoError(RepositoryNotFoundError): pass
class RevisionNotFoundError(HfHubHTTPError): pass
`,
		"__init__.py": `import errno, os
from .errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
class HfApi:
    def list_repo_files(self, repo, revision=None):
        mode = os.environ["MODE"]
        if mode == "gated": raise GatedRepoError("gated")
        if mode == "missing": raise RepositoryNotFoundError("missing")
        if mode == "revision": raise RevisionNotFoundError("revision")
        return ["config.json", "model-00001.safetensors", "pytorch_model.bin", "original/consolidated.00.pth"]
def snapshot_download(repo, revision=None, ignore_patterns=None):
    mode = os.environ["MODE"]
    if mode == "full": raise OSError(errno.ENOSPC, "No space left on device")
    if mode == "network": raise ConnectionError("network")
    print(repo, revision, ignore_patterns)
`,
	} {
		if err := os.WriteFile(filepath.Join(hub, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for mode, want := range map[string]struct {
		code   int
		stdout string
	}{
		"ok":       {0, "org/m None ['*.bin', '*.pt', '*.pth', '*.gguf', 'original/*']\n"},
		"missing":  {10, ""},
		"gated":    {11, ""},
		"revision": {12, ""},
		"full":     {13, ""},
		"network":  {1, ""},
	} {
		cmd := exec.Command(python, command[1:]...)
		cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Dir(hub), "MODE="+mode)
		var stdout strings.Builder
		cmd.Stdout = &stdout
		err := cmd.Run()
		code := 0
		if e, ok := err.(*exec.ExitError); ok {
			code = e.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != want.code || stdout.String() != want.stdout {
			t.Errorf("%s: exit %d, stdout %q; want %d, %q", mode, code, stdout.String(), want.code, want.stdout)
		}
		if c := int32(code); code >= 10 && !slices.Contains(job.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values, c) {
			t.Errorf("%s: exit code %d is not in the podFailurePolicy", mode, code)
		}
	}
}

// TestPrefetchFillKeyIsTheJob: a model's fill Job is told by its kind and
// its whole key, not by the key's prefix alone: model m-fill-x's objects
// (engine-m-fill-x, engine-m-fill-x-service, …) start as model m's fill Job
// keys do, yet m's status names its own Job, and m's engines start once
// that Job is Complete.
func TestPrefetchFillKeyIsTheJob(t *testing.T) {
	rw := map[string]any{"accessModes": []any{"ReadWriteMany"}, "prefetch": map[string]any{}}
	xr := with("model", nil, "models", []any{
		map[string]any{"name": "m", "modelURL": "org/m", "storage": rw},
		map[string]any{"name": "m-fill-x", "modelURL": "org/x"},
	})
	m := stacktest.Read(t, xr)
	spec, raw, err := resolve.DecodeSpec(m.Spec)
	if err != nil {
		t.Fatal(err)
	}
	s := New(resolve.Identity{Name: m.Name, Namespace: m.Namespace}, spec, &v1beta1.Input{})
	if err := s.Validate(raw).Err(); err != nil {
		t.Fatal(err)
	}
	objs, err := s.Compose(build.Keys(func(string) bool { return false }))
	if err != nil {
		t.Fatal(err)
	}
	var job string
	for _, o := range objs {
		if _, ok := o.Obj.(*batchv1.Job); ok {
			job = o.Key
		}
	}
	if !strings.HasPrefix(job, "engine-m-fill-") {
		t.Fatalf("no fill Job for model m among %d objects", len(objs))
	}
	if got := s.Parts().Engines[0].FillKey; got != job {
		t.Errorf("model m's FillKey %q, want its Job's key %q", got, job)
	}
	complete := map[string]any{"apiVersion": "batch/v1", "kind": "Job", "metadata": map[string]any{"name": "j"},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Complete", "status": "True"}}}}
	objs, err = s.Compose(fakeObserved{objects: map[string]map[string]any{job: complete}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(objs, func(o build.Object) bool { return o.Key == "engine-m" }) {
		t.Errorf("model m's Deployment withheld although its fill Job %s is Complete; held %v", job, s.Withheld())
	}
}
