package build

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// A model's cache claim filled once (storage.prefetch, issue 43): a Job per
// claim downloads the model into it with huggingface_hub, which every vLLM
// image carries, before the engines are composed; the engines then read it
// offline (HF_HUB_OFFLINE=1: vLLM passes local_files_only to
// snapshot_download, vllm/model_executor/model_loader/weight_utils.py).
// Facts: testdata/upstream/MODEL-LIFE.md.

// ComponentModelCache is the component of the fill Jobs' pods: not an
// engine's, so neither the router, the picker nor a Service selects them.
const ComponentModelCache = "model-cache"

// FillContainer is the fill Job's container.
const FillContainer = "fill"

// fillProgram downloads what any vLLM release loads from the repository at
// the revision: every file but the weight formats vLLM would not pick (it
// takes the first of *.safetensors, *.bin, *.pt the repository has) and the
// original/ checkpoints of Meta's repositories, which no loader reads. The
// repository and the revision are argv items, never part of the program.
// Failures a retry cannot mend exit with a code of FillExitReasons, which
// the Job's podFailurePolicy turns into a failed Job at once; anything else
// (the network) is retried. huggingface_hub's API and errors, in every
// release vLLM's images carry (>= 0.30.0): HfApi.list_repo_files,
// snapshot_download(ignore_patterns), huggingface_hub.errors
// GatedRepoError (a RepositoryNotFoundError), RepositoryNotFoundError,
// RevisionNotFoundError (src/huggingface_hub/errors.py:174-257@v0.30.0,
// :301-410@v1.28.0).
const fillProgram = `import errno, fnmatch, sys
from huggingface_hub import HfApi, snapshot_download
from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError, RevisionNotFoundError
repo, revision = sys.argv[1], sys.argv[2] or None
def fail(code, e):
    print(e, file=sys.stderr)
    sys.exit(code)
try:
    files = HfApi().list_repo_files(repo, revision=revision)
    weights = ["*.safetensors", "*.bin", "*.pt"]
    keep = next((p for p in weights if fnmatch.filter(files, p)), None)
    skip = [p for p in weights + ["*.pth", "*.gguf", "original/*"] if p != keep]
    snapshot_download(repo, revision=revision, ignore_patterns=skip)
except GatedRepoError as e:
    fail(11, e)
except RepositoryNotFoundError as e:
    fail(10, e)
except RevisionNotFoundError as e:
    fail(12, e)
except OSError as e:
    if e.errno != errno.ENOSPC:
        raise
    fail(13, e)
`

// FillExitReasons are the exit codes of fillProgram that end its Job at
// once, and what each says (the status repeats it).
var FillExitReasons = map[int32]string{
	10: "the model is not on the Hub, or it is private and vllmConfig.hfTokenSecret is missing or cannot read it",
	11: "the model is gated: its terms are not accepted for the token of vllmConfig.hfTokenSecret (or there is none)",
	12: "the model has no such revision",
	13: "no space left on the claim: raise storage.size",
}

// fillBackoffLimit is how often a failed download is retried.
const fillBackoffLimit = 3

// FillJob is the Job that fills engine e's claim, keyed by a hash of its
// spec: a changed model, revision, image or placement is a new Job (a
// Job's template is immutable). ok is false where e composes no claim or
// does not prefetch.
func FillJob(s *resolve.Stack, e resolve.Engine) (key string, job *batchv1.Job, ok bool) {
	if !e.Prefetch || !resolve.OwnsClaimKey(e) {
		return "", nil, false
	}
	c := resolve.ClaimEngine(e)
	v := e.Cfg.VLLMConfig
	env := []corev1.EnvVar{{Name: "HF_HOME", Value: ModelCachePath}}
	if t := v.HFTokenSecret; t != nil {
		env = append(env, secretEnv("HF_TOKEN", t))
	}
	vol, _ := modelCacheVolume(s, e)
	pod := corev1.PodSpec{
		RestartPolicy:                corev1.RestartPolicyNever,
		AutomountServiceAccountToken: ptr.To(false),
		SecurityContext:              e.Cfg.Pod.SecurityContext,
		Containers: []corev1.Container{{
			Name:            FillContainer,
			Image:           resolve.ImageRef(v.ImagePullRegistry, v.Image),
			ImagePullPolicy: corev1.PullPolicy(v.ImagePullPolicy),
			Command:         []string{"python3", "-c", fillProgram, e.Model.ModelURL, e.Model.Revision},
			Env:             env,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi"),
			}},
			VolumeMounts: []corev1.VolumeMount{{Name: vol.Name, MountPath: ModelCachePath}},
			// A failed download's last lines (401: no token, 403: a gated
			// model, no space left) become the pod's termination message.
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			SecurityContext:          e.Cfg.Pod.ContainerSecurityContext,
		}},
		Volumes: []corev1.Volume{vol},
	}
	if v.ImagePullSecretName != "" {
		pod.ImagePullSecrets = []corev1.LocalObjectReference{{Name: v.ImagePullSecretName}}
	}
	// Where the engines run: a zonal volume binds where its first pod runs.
	schedule(&pod, e.Cfg.Scheduling)
	codes := make([]int32, 0, len(FillExitReasons))
	for c := range FillExitReasons {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	spec := batchv1.JobSpec{
		BackoffLimit: ptr.To(int32(fillBackoffLimit)),
		// A failure a retry cannot mend fails the Job at once, its exit
		// code in the Failed condition's message (PodFailurePolicy: beta,
		// on by default, from Kubernetes 1.26; GA in 1.31); an evicted pod
		// is retried without counting.
		PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr.To(FillContainer), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: codes,
			}},
			{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
			}},
		}},
		Template: corev1.PodTemplateSpec{Spec: pod},
	}
	hash := FillHash(spec)
	// Not an engine's labels (no model label either): nothing that routes
	// selects the Job's pod.
	labels := names.Labels(s.Name, names.Shorten(c.ID, names.MaxLabelLength), ComponentModelCache)
	spec.Template.Labels = labels
	return names.EngineFillKey(c.ID, hash), &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: s.Meta(s.Names.Fill(c.ID, hash), labels),
		Spec:       spec,
	}, true
}

// FillHash is the first 10 hex digits of the SHA-256 of a Job spec's JSON.
func FillHash(spec batchv1.JobSpec) string {
	b, _ := json.Marshal(spec)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:10]
}
