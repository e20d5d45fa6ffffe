// Package adaptersync builds what runs the LoRA adapter sync program
// (internal/adaptersync, `function adapter-sync`) beside a vLLM engine: the
// ConfigMap with the JSON list of adapters the program reads, its container
// (the function's own image), the volumes it mounts, and the ServiceAccount,
// Role and RoleBinding that let it patch pods, which the admission policy
// of composition/clusterrole.yaml (PolicyName) narrows to its own pod's
// annotations lora-modified and vllm.ai/lora-adapters. It takes
// plain values and knows nothing of the ProductionStack: the stack package
// reads the spec and decides.
//
// The adapters are data: they live in the ConfigMap only, whose content is
// never hashed into the pod template, so adding, changing or removing one
// changes no engine pod. The kubelet updates the mounted file (a whole-volume
// mount, not a subPath) and the program rereads it every interval.
package adaptersync

import (
	"encoding/json"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/internal/adaptersync"
)

const (
	// ContainerName is the sync container's name in the engine pod.
	ContainerName = "adapter-sync"
	// ConfigKey is the ConfigMap's key, and the file the program reads.
	ConfigKey = "adapters.json"
	// ConfigVolume and TokenVolume are the pod volumes the container mounts.
	ConfigVolume = "adapter-sync-config"
	TokenVolume  = "adapter-sync-token"
	// DownloadVolume is where the container downloads Hugging Face
	// adapters: an emptyDir of the pod, writable by the container's user
	// whoever owns the model cache (a root-owned cache, or an NFS-like one
	// where fsGroup is not applied), which vLLM mounts read-only at the same
	// path. The model cache itself is read-only in the sync container.
	DownloadVolume = "adapter-sync-downloads"

	// ServiceAccountSuffix ends the name of every adapter sync
	// ServiceAccount (<stack>-adapter-sync): the admission policy of
	// composition/clusterrole.yaml selects the sync identity by it.
	ServiceAccountSuffix = "-adapter-sync"
	// PolicyName names the ValidatingAdmissionPolicy and its binding in
	// composition/clusterrole.yaml that confine the sync identity to its
	// own pod's two annotations.
	PolicyName = "function-vllm-stack-adapter-sync"

	// User is the function image's user (hack/imagebuild), as which the
	// sync container runs.
	User = 65532

	configDir = "/etc/adapters"
	// tokenDir is where the program reads the ServiceAccount's token and the
	// cluster's CA (internal/adaptersync serviceAccountDir). The token is
	// projected into this container only: the pod may keep
	// automountServiceAccountToken false, so vLLM never holds it.
	tokenDir = "/var/run/secrets/kubernetes.io/serviceaccount"
	// tokenSeconds is the projected token's lifetime; the kubelet renews it
	// and the program rereads the file on every call.
	tokenSeconds = 3607
	// rootCA is the ConfigMap Kubernetes publishes in every namespace.
	rootCA = "kube-root-ca.crt"
)

// An Adapter is one runtime adapter: a name and one source.
type Adapter struct {
	Name string
	// Repo and Revision: a Hugging Face repository ("" revision: main).
	Repo, Revision string
	// Path: a directory on the model cache.
	Path string
}

// Config is the content of the ConfigMap: the program's JSON list, sorted
// as given (the caller keeps the user's order, which is stable).
func Config(adapters []Adapter) string {
	list := make([]adaptersync.Adapter, 0, len(adapters))
	for _, a := range adapters {
		item := adaptersync.Adapter{Name: a.Name}
		if a.Path != "" {
			item.Source.Path = a.Path
		} else {
			item.Source.HuggingFace = &adaptersync.HuggingFace{Repo: a.Repo, Revision: a.Revision}
		}
		list = append(list, item)
	}
	b, _ := json.Marshal(list) // plain strings: cannot fail
	return string(b)
}

// ConfigMap holds the adapters of one model's engines.
func ConfigMap(name, namespace string, labels map[string]string, adapters []Adapter) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Data:       map[string]string{ConfigKey: Config(adapters)},
	}
}

// Container is the values of the sync container.
type Container struct {
	Image string
	// EnginePort is vLLM's port on localhost.
	EnginePort int32
	// CacheVolume is the pod's model cache volume, mounted read-only at
	// CachePath (adapters of a path source are read there); Dir is where
	// Hugging Face adapters are downloaded, DownloadVolume's mount.
	CacheVolume, CachePath, Dir string
	// Env is added after the downward API's: HF_TOKEN, VLLM_API_KEY.
	Env []corev1.EnvVar
}

// Spec is the sync container.
func (c Container) Spec() corev1.Container {
	env := []corev1.EnvVar{
		fieldEnv("POD_NAME", "metadata.name"),
		fieldEnv("POD_NAMESPACE", "metadata.namespace"),
	}
	env = append(env, c.Env...)
	return corev1.Container{
		Name:  ContainerName,
		Image: c.Image,
		// The function's binary: main.go runs the program for this argument.
		Args: []string{
			"adapter-sync",
			"--config=" + configDir + "/" + ConfigKey,
			"--engine=http://127.0.0.1:" + strconv.Itoa(int(c.EnginePort)),
			"--dir=" + c.Dir,
		},
		Env: env,
		VolumeMounts: []corev1.VolumeMount{
			{Name: ConfigVolume, MountPath: configDir, ReadOnly: true},
			{Name: TokenVolume, MountPath: tokenDir, ReadOnly: true},
			{Name: c.CacheVolume, MountPath: c.CachePath, ReadOnly: true},
			{Name: DownloadVolume, MountPath: c.Dir},
		},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("50m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		}},
		SecurityContext: securityContext(),
	}
}

// securityContext is the sync container's, whatever the pod's or the
// engine's: the image's non-root user named explicitly (a pod's runAsUser
// 0 would otherwise apply), no privilege, no capability, a read-only root
// filesystem (the program writes only DownloadVolume) and the runtime's
// default seccomp profile. It is never the engine container's, which may be
// privileged.
func securityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsUser:                ptr.To[int64](User),
		RunAsGroup:               ptr.To[int64](User),
		RunAsNonRoot:             ptr.To(true),
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// EngineMount is DownloadVolume as the engine container mounts it: at the
// sync container's Dir, read-only, so the paths the program loads are the
// engine's.
func EngineMount(dir string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: DownloadVolume, MountPath: dir, ReadOnly: true}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
	}}
}

// Volumes are the ConfigMap's, the projected token's and the downloads'.
func Volumes(configMap string) []corev1.Volume {
	return []corev1.Volume{
		{Name: ConfigVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap},
		}}},
		{Name: TokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](tokenSeconds)}},
				{ConfigMap: &corev1.ConfigMapProjection{
					LocalObjectReference: corev1.LocalObjectReference{Name: rootCA},
					Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
				}},
			},
		}}},
		{Name: DownloadVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
}

// ServiceAccount is the engine pods' identity; its name must end in
// ServiceAccountSuffix.
func ServiceAccount(name, namespace string, labels map[string]string) *corev1.ServiceAccount {
	return &corev1.ServiceAccount{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ServiceAccount"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		// The sync container mounts its own projected token.
		AutomountServiceAccountToken: ptr.To(false),
	}
}

// Rules are the least the program needs: a merge patch of its own pod's
// annotations (internal/adaptersync InClusterPatcher). RBAC cannot name a
// pod not yet created, so it is every pod of the namespace; the admission
// policy PolicyName narrows it to the pod the token is bound to, and to the
// annotations the program owns.
func Rules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"patch"}}}
}

// Role grants Rules in the namespace.
func Role(name, namespace string, labels map[string]string) *rbacv1.Role {
	return &rbacv1.Role{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Rules:      Rules(),
	}
}

// RoleBinding binds the Role to the stack's own sync ServiceAccount, never
// a user's: the policy confines only names ending in ServiceAccountSuffix.
func RoleBinding(name, namespace string, labels map[string]string, role string, serviceAccount string) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount, Namespace: namespace}},
	}
}
