package stack

import (
	"encoding/json"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

const (
	loraSidecarContainer = "sidecar"
	loraSidecarPort      = 30090
	loraSidecarPortName  = "sidecar-port"
	loraAdaptersDir      = modelCachePath + "/lora-adapters"
	defaultLoRASidecar   = "lmcache/lmstack-sidecar:latest"
)

// loraArgs loads the model's static LoRA adapters at start-up.
func loraArgs(e engine) []string {
	if len(e.model.LoRAAdapters) == 0 {
		return nil
	}
	args := make([]string, 0, 1+len(e.model.LoRAAdapters))
	args = append(args, "--lora-modules")
	for _, a := range e.model.LoRAAdapters {
		args = append(args, loraModule(a))
	}
	return args
}

// loraModule is one item of --lora-modules. vLLM reads an item as name=path
// only when it has an '=' and no ','; anything else must be JSON, which
// every supported release also accepts. So name=path where that reads back
// as written, else {"name":…,"path":…}.
func loraModule(a v1alpha1.LoRAAdapter) string {
	if !strings.ContainsAny(a.Name+a.Path, "=,") {
		return a.Name + "=" + a.Path
	}
	b, _ := json.Marshal(struct {
		Name string `json:"name"`
		Path string `json:"path"`
	}{a.Name, a.Path})
	return string(b)
}

// loraSidecarOn: the sidecar downloads adapters onto the model cache, so it
// runs with LoRA and storage unless turned off.
func loraSidecarOn(e engine) bool {
	sc := e.cfg.LoRASidecar
	if sc != nil && sc.Enabled != nil {
		return e.model.EnableLoRA && enabled(e.cfg.Storage.Enabled) && *sc.Enabled
	}
	// The adapter sync container downloads runtime adapters itself.
	return e.model.EnableLoRA && enabled(e.cfg.Storage.Enabled) && !runtimeAdaptersOn(e)
}

// loraSidecar downloads LoRA adapters into /data/lora-adapters, where vLLM
// loads them at run time (VLLM_ALLOW_RUNTIME_LORA_UPDATING).
func loraSidecar(e engine) corev1.Container {
	c := corev1.Container{
		Name:  loraSidecarContainer,
		Image: defaultLoRASidecar,
		Env: []corev1.EnvVar{
			{Name: "PORT", Value: strconv.Itoa(loraSidecarPort)},
			{Name: "LORA_DOWNLOAD_BASE_DIR", Value: loraAdaptersDir},
		},
		Ports:        []corev1.ContainerPort{{Name: loraSidecarPortName, ContainerPort: loraSidecarPort, Protocol: corev1.ProtocolTCP}},
		VolumeMounts: []corev1.VolumeMount{{Name: e.cacheVolume, MountPath: modelCachePath}},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("500m"),
			corev1.ResourceMemory: resource.MustParse("128Mi"),
		}},
	}
	if sc := e.cfg.LoRASidecar; sc != nil {
		c.Image = or(sc.Image, c.Image)
		if sc.Resources != nil {
			c.Resources = *sc.Resources.DeepCopy()
		}
	}
	return c
}
