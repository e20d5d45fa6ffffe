package validate

import (
	"path"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/stack/build"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
	"github.com/vllm-project/function-vllm-stack/upstream"
)

// Checks of stacks the API accepts but that most likely do not do what their
// author meant. Those that make a pod fail are errors; the others warnings.

// cudaImages are the images of vLLM built for NVIDIA GPUs: vLLM in them
// fails at start without one.
var cudaImages = []string{upstream.VLLMImageRepo, resolve.LMCacheImage}

// secretVariables hold credentials; the stack takes them from Secrets.
var secretVariables = []struct{ name, field string }{
	{"HF_TOKEN", "vllmConfig.hfTokenSecret"},
	{"VLLM_API_KEY", "routerConfig.apiKeySecret"},
}

// validateEngineMistakes checks one merged engine.
func validateEngineMistakes(f *Findings, e resolve.Engine) {
	v := e.Cfg.VLLMConfig
	repo, _ := upstream.ImageTag(resolve.ImageRef(v.ImagePullRegistry, v.Image))
	if n, err := resolve.GPUs(e.Cfg.Resources.GPU); err == nil && n == 0 && isCUDAImage(repo) {
		at, name := e.Where("resources.gpu")
		f.warnf("%s: %s is %s and %s is vLLM built for NVIDIA GPUs, which fails at start without one: set %s, or use a CPU image of vLLM", at, name("resources.gpu"), resolve.Or(e.Cfg.Resources.GPU, "unset"), repo, name("resources.gpu"))
	}
	literalSecrets(f, e.Block+".env", e.Cfg.Env)
	if p := e.Model.Path; p != "" && !underAnyMount(p, build.EngineVolumeMounts(e)) {
		f.warnf("%s.path %s is not under a volume mounted in the engine container: vLLM finds the model only if the image contains it; mount it with storage (at %s) or storage.extraVolumeMounts", e.Path, p, build.ModelCachePath)
	}
}

func isCUDAImage(repo string) bool {
	for _, c := range cudaImages {
		if resolve.IsImageOf(repo, c) {
			return true
		}
	}
	return false
}

// literalSecrets warns about credentials written into env as plain values:
// they are stored in the Deployment for anyone who can read it.
func literalSecrets(f *Findings, field string, env []corev1.EnvVar) {
	for _, e := range env {
		for _, s := range secretVariables {
			if e.Name == s.name && e.ValueFrom == nil {
				f.warnf("%s sets %s to a literal value, stored in plain text in the Deployment: put it in a Secret and use %s or env valueFrom.secretKeyRef", field, s.name, s.field)
			}
		}
	}
}

// underAnyMount reports whether an absolute path lies in a mounted volume.
func underAnyMount(p string, mounts []corev1.VolumeMount) bool {
	p = path.Clean(p)
	for _, m := range mounts {
		mp := path.Clean(m.MountPath)
		if p == mp || strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/") {
			return true
		}
	}
	return false
}

// serverFlags refuses extra arguments that move a server off the address its
// probes and Service use: the pod would never become ready.
func serverFlags(f *Findings, field string, args []string, port int) {
	for i, a := range args {
		flag, _, _ := strings.Cut(a, "=")
		if flag == "--port" || flag == "--host" {
			f.errorf("%s[%d] %q is refused: the stack sets %s itself (the probes and the Service use port %d on every address); remove it", field, i, a, flag, port)
		}
	}
}
