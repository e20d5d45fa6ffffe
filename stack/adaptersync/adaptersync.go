// Package adaptersync builds what runs the LoRA adapter sync program
// (internal/adaptersync, `function adapter-sync`) beside a vLLM engine: the
// ConfigMap with the JSON list of adapters the program reads, its container
// (the function's own image), the volumes it mounts, and the ServiceAccount,
// Role and RoleBinding that let it patch its own pod's annotations. It takes
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
	// CacheVolume is the pod's model cache volume, mounted at CachePath;
	// Dir is where Hugging Face adapters are downloaded (under CachePath,
	// the directory vLLM's filesystem resolver reads).
	CacheVolume, CachePath, Dir string
	// Env is added after the downward API's: HF_TOKEN, VLLM_API_KEY.
	Env []corev1.EnvVar
	// SecurityContext is the engine container's, if the user set one.
	SecurityContext *corev1.SecurityContext
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
			{Name: c.CacheVolume, MountPath: c.CachePath},
		},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("50m"),
			corev1.ResourceMemory: resource.MustParse("64Mi"),
		}},
		SecurityContext: c.SecurityContext,
	}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: path},
	}}
}

// Volumes are the ConfigMap's and the projected token's.
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
	}
}

// ServiceAccount is the engine pods' identity when the user names none.
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
// pod not yet created, so it is every pod of the namespace.
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

// RoleBinding binds the Role to the engine pods' ServiceAccounts.
func RoleBinding(name, namespace string, labels map[string]string, role string, serviceAccounts []string) *rbacv1.RoleBinding {
	subjects := make([]rbacv1.Subject, 0, len(serviceAccounts))
	for _, sa := range serviceAccounts {
		subjects = append(subjects, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa, Namespace: namespace})
	}
	return &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects:   subjects,
	}
}
