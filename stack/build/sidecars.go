package build

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/stack/adaptersync"
	"github.com/vllm-project/function-vllm-stack/stack/inferencepool"
	"github.com/vllm-project/function-vllm-stack/stack/names"
	"github.com/vllm-project/function-vllm-stack/stack/resolve"
)

// routingSidecar is the sidecar container of a decode pod: on the engine
// port, which the pool and the engine Service target, in front of vLLM.
func routingSidecar(s *resolve.Stack) corev1.Container {
	sc := s.Extension.Sidecar
	return inferencepool.SidecarContainer(inferencepool.Sidecar{
		Image: sc.Image, PullPolicy: sc.PullPolicy, Release: sc.Release,
		Port: names.EnginePort, EnginePort: inferencepool.DecodeEnginePort,
	})
}

const (
	LoRASidecarContainer = "sidecar"
	LoRASidecarPort      = 30090
	LoRASidecarPortName  = "sidecar-port"
	loraAdaptersDir      = ModelCachePath + "/lora-adapters"
	defaultLoRASidecar   = "lmcache/lmstack-sidecar:latest"
)

// loraSidecar downloads LoRA adapters into /data/lora-adapters, where vLLM
// loads them at run time (VLLM_ALLOW_RUNTIME_LORA_UPDATING).
func loraSidecar(e resolve.Engine) corev1.Container {
	c := corev1.Container{
		Name:  LoRASidecarContainer,
		Image: defaultLoRASidecar,
		Env: []corev1.EnvVar{
			{Name: "PORT", Value: strconv.Itoa(LoRASidecarPort)},
			{Name: "LORA_DOWNLOAD_BASE_DIR", Value: loraAdaptersDir},
		},
		Ports:        []corev1.ContainerPort{{Name: LoRASidecarPortName, ContainerPort: LoRASidecarPort, Protocol: corev1.ProtocolTCP}},
		VolumeMounts: []corev1.VolumeMount{{Name: e.CacheVolume, MountPath: ModelCachePath}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("500m"),
			corev1.ResourceMemory: resource.MustParse("128Mi"),
		}},
	}
	if sc := e.Cfg.LoRASidecar; sc != nil {
		c.Image = resolve.Or(sc.Image, c.Image)
		if sc.Resources != nil {
			c.Resources = *sc.Resources.DeepCopy()
		}
	}
	return c
}

// adapterValues are the model's runtime adapters as the builder takes them,
// in the user's order.
func adapterValues(e resolve.Engine) []adaptersync.Adapter {
	out := make([]adaptersync.Adapter, 0, len(e.Model.Adapters))
	for _, a := range e.Model.Adapters {
		v := adaptersync.Adapter{Name: a.Name, Path: a.Path}
		if hf := a.HuggingFace; hf != nil {
			v.Repo, v.Revision = hf.Repo, hf.Revision
		}
		out = append(out, v)
	}
	return out
}

// adaptersConfigMap is the engine's adapter list. Its content is never
// hashed into the pod template: the adapters change without a restart.
func adaptersConfigMap(s *resolve.Stack, e resolve.Engine) *corev1.ConfigMap {
	return adaptersync.ConfigMap(s.Names.EngineAdapters(e.ID), s.Namespace, EngineLabels(s.Name, e), adapterValues(e))
}

// runtimeAdaptersDir is where the sync container downloads Hugging Face
// adapters and vLLM reads them: the pod's adaptersync.DownloadVolume, outside
// the model cache, so the kubelet never creates a mount point on the cache
// (which a root-squashing NFS server would refuse).
const runtimeAdaptersDir = "/lora-adapters"

// withAdapterSync adds the sync container, its volumes and identity to an
// engine pod.
func withAdapterSync(s *resolve.Stack, e resolve.Engine, pod *corev1.PodSpec) {
	var env []corev1.EnvVar
	if t := e.Cfg.VLLMConfig.HFTokenSecret; t != nil {
		env = append(env, secretEnv("HF_TOKEN", t))
	}
	if k := s.Router.APIKey; k != nil {
		env = append(env, secretEnv("VLLM_API_KEY", k))
	}
	c := adaptersync.Container{
		Image:       s.AdapterSyncImage,
		EnginePort:  names.EnginePort,
		CacheVolume: e.CacheVolume,
		CachePath:   ModelCachePath,
		Dir:         runtimeAdaptersDir,
		Env:         env,
	}
	pod.Containers = append(pod.Containers, c.Spec())
	pod.Volumes = append(pod.Volumes, adaptersync.Volumes(s.Names.EngineAdapters(e.ID))...)
	// Validation refuses pod.serviceAccountName and
	// automountServiceAccountToken: true with runtime adapters.
	pod.ServiceAccountName = s.Names.AdapterSyncServiceAccount()
	pod.AutomountServiceAccountToken = ptr.To(false)
}

// adapterSyncObjects are the stack's RBAC for the sync containers: its
// ServiceAccount, the Role, and the RoleBinding once the Role is observed
// (as the router's: see stackObjects).
func adapterSyncObjects(s *resolve.Stack, o Observed) []Object {
	if !resolve.RuntimeAdaptersAny(s) {
		return nil
	}
	labels := names.Labels(s.Name, names.ComponentEngine, "adapter-sync")
	sa := s.Names.AdapterSyncServiceAccount()
	objs := []Object{
		{names.AdapterSyncServiceAccountKey, adaptersync.ServiceAccount(sa, s.Namespace, labels)},
		{names.AdapterSyncRoleKey, adaptersync.Role(s.Names.AdapterSyncRole(), s.Namespace, labels)},
	}
	if o.Has(names.AdapterSyncRoleKey) {
		objs = append(objs, Object{names.AdapterSyncRoleBindingKey, adaptersync.RoleBinding(s.Names.AdapterSyncRoleBinding(), s.Namespace, labels, s.Names.AdapterSyncRole(), sa)})
	}
	return objs
}
