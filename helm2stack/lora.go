package helm2stack

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/utils/ptr"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Conversions of LoRA adapters.
//
// A loraAdapters item is a LoraAdapter object for the chart's LoRA
// controller (operator/internal/controller/loraadapter_controller.go at
// vllm-stack-0.1.12), which loads it into the ready pods labelled
// model=<baseModel> while they run: the adapterPath when one is given,
// whatever the type, else for type huggingface the repository, downloaded
// (snapshot_download, branch main) by the chart's sidecar into
// /data/lora-adapters/<adapterName> on the model's claim; s3 and http are
// "not implemented yet". The stack's equivalent is the model's runtime
// adapters (enableRuntimeAdapters, adapters[]): loaded and unloaded while
// the engines run, from a directory on the model cache (the chart's claim
// at /data) or a Hugging Face repository downloaded there. What runtime
// adapters cannot take is loaded at start-up (loraAdapters, --lora-modules),
// with a note saying why.

// loraAdapter is a loraAdapters item, placed on its model at the end.
type loraAdapter struct {
	path, baseModel string
	name            string
	// dir is adapterPath; repo the Hugging Face repository when there is
	// no adapterPath.
	dir, repo string
	// credentials is adapterSource.credentials: the token of a Hugging Face
	// download.
	credentials any
	// replicas is loraAdapterDeploymentConfig.replicas: the controller
	// loads the adapter on the first so many ready pods by name (0: all).
	replicas int32
	// others are the keys the stack has no place for, for a note.
	others []string
}

func (c *converter) loraAdapters(n node) error {
	return c.eachItem(n, func(item node) error {
		var v struct {
			Name          string            `json:"name"`
			Enabled       *bool             `json:"enabled"`
			Labels        map[string]string `json:"labels"`
			BaseModel     string            `json:"baseModel"`
			VLLMAPIKey    any               `json:"vllmApiKey"`
			AdapterSource struct {
				Type        string `json:"type"`
				AdapterName string `json:"adapterName"`
				AdapterPath string `json:"adapterPath"`
				Repository  string `json:"repository"`
				Pattern     string `json:"pattern"`
				MaxAdapters *int32 `json:"maxAdapters"`
				Credentials any    `json:"credentials"`
			} `json:"adapterSource"`
			DeploymentConfig *struct {
				Algorithm string            `json:"algorithm"`
				Replicas  *int32            `json:"replicas"`
				Labels    map[string]string `json:"labels"`
			} `json:"loraAdapterDeploymentConfig"`
		}
		if err := item.object(&v); err != nil {
			return err
		}
		if v.Enabled != nil && !*v.Enabled {
			return nil
		}
		src := v.AdapterSource
		a := loraAdapter{path: item.path, baseModel: v.BaseModel, name: cmp.Or(src.AdapterName, v.Name), dir: src.AdapterPath}
		switch {
		case src.AdapterPath != "":
		case src.Type == "huggingface":
			a.repo = src.Repository
			a.credentials = src.Credentials
		case src.Type == "local":
		default:
			c.res.drop(item.path, "not supported: adapters come from a directory (adapterPath) or a Hugging Face repository; the LoRA controller of vllm-stack "+ChartVersion+" implements no other source either")
			return nil
		}
		if (a.dir == "" && a.repo == "") || a.name == "" {
			return fmt.Errorf("%s.adapterSource needs adapterName and, for type %s, %s", item.path, src.Type, map[string]string{"local": "adapterPath", "huggingface": "repository"}[src.Type])
		}
		// Keys the controller reads that the stack has no place for; the
		// controller ignores pattern, maxAdapters and the algorithm.
		if v.VLLMAPIKey != nil {
			a.others = append(a.others, "vllmApiKey (the engines are called with the stack's API key)")
		}
		if d := v.DeploymentConfig; d != nil && d.Replicas != nil && *d.Replicas > 0 {
			a.replicas = *d.Replicas
		}
		if len(v.Labels) > 0 {
			a.others = append(a.others, "labels (of the LoraAdapter object, which the stack does not make)")
		}
		c.adapters = append(c.adapters, a)
		return nil
	})
}

// runtimeAdapterName is the stack's pattern of a runtime adapter's name.
var runtimeAdapterName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.:-]*$`)

func (c *converter) addAdapters() error {
	for _, a := range c.adapters {
		var target *modelState
		name := a.baseModel
		if merged, ok := c.mergedInto[name]; ok {
			name = merged
			c.res.note(a.path, fmt.Sprintf("baseModel %s is now model %s, disaggregated: both groups load the adapter", a.baseModel, merged))
		}
		for _, m := range c.models {
			if m.name == name {
				target = m
			}
		}
		switch {
		case target == nil:
			c.res.drop(a.path, fmt.Sprintf("its baseModel %q is no enabled model of servingEngineSpec.modelSpec", a.baseModel))
		case !target.m.EnableLoRA:
			c.res.drop(a.path, fmt.Sprintf("model %s has no enableLoRA: adapters need it", a.baseModel))
		default:
			c.addAdapter(target, a)
		}
	}
	return nil
}

// addAdapter puts an adapter on its model: a runtime adapter where it can
// be one, else one loaded at start-up.
func (c *converter) addAdapter(m *modelState, a loraAdapter) {
	// Fewer pods than the model may run: the stack loads on every one.
	if n := a.replicas; n > 0 && (m.m.Autoscaling != nil || n < ptr.Deref(m.m.Replicas, 1)) {
		a.others = append(a.others, fmt.Sprintf("loraAdapterDeploymentConfig.replicas %d (the controller loaded it on the first %s by name; every replica loads it)", n, count(n, "ready pod")))
	}
	if why := notRuntime(m, a); why != "" {
		src := cmp.Or(a.dir, a.repo)
		m.m.LoRAAdapters = append(m.m.LoRAAdapters, v1alpha1.LoRAAdapter{Name: a.name, Path: src})
		msg := "loaded at start-up by every replica (loraAdapters, --lora-modules), not at run time (model.adapters), because " + why + ": adding or removing such an adapter restarts the engines"
		if len(a.others) > 0 {
			msg += "; not carried over: " + strings.Join(a.others, ", ")
		}
		c.res.note(a.path, msg)
		return
	}
	ra := v1alpha1.RuntimeAdapter{Name: a.name, Path: a.dir}
	if a.repo != "" {
		ra.HuggingFace = &v1alpha1.AdapterHuggingFace{Repo: a.repo}
		if a.credentials != nil && !sameSecret(a.credentials, m.m.VLLMConfig) {
			c.res.drop(a.path+".adapterSource.credentials", fmt.Sprintf("not supported: the sync container downloads adapters with the model's token (vllmConfig.hfTokenSecret, the chart's %s.hf_token); give that token read access to %s, or make hf_token the Secret of credentials", m.path, a.repo))
		}
	}
	m.m.EnableRuntimeAdapters = true
	m.m.Adapters = append(m.m.Adapters, ra)
	msg := "loaded at run time by every replica's adapter sync container (model.adapters): the Composition's Input must name the function's image as adapterSync.image"
	if len(a.others) > 0 {
		msg += "; not carried over: " + strings.Join(a.others, ", ")
	}
	c.res.note(a.path, msg)
}

// notRuntime is why an adapter cannot be a runtime adapter of the model, or
// "".
func notRuntime(m *modelState, a loraAdapter) string {
	st := m.m.Storage
	switch {
	case st == nil || (st.Enabled != nil && !*st.Enabled):
		return "the model has no pvcStorage: runtime adapters live on the model cache"
	case m.m.MultiNode != nil:
		return "the model is multi-node (raySpec): runtime adapters are loaded into one pod's engine"
	case !runtimeAdapterName.MatchString(a.name) || len(a.name) > 253:
		return fmt.Sprintf("its name %q is no directory name (letters, digits, '_', '.', ':', '-')", a.name)
	case a.dir != "" && (!strings.HasPrefix(a.dir, "/data/") || slices.Contains(strings.Split(a.dir, "/"), "..")):
		return fmt.Sprintf("its adapterPath %s is not on the model cache (under /data/, where the chart mounts pvcStorage)", a.dir)
	}
	return ""
}

// sameSecret: credentials {secretName, secretKey} name the model's
// hfTokenSecret.
func sameSecret(credentials any, v *v1alpha1.VLLMConfig) bool {
	ref, ok := credentials.(map[string]any)
	if !ok || v == nil || v.HFTokenSecret == nil {
		return false
	}
	return ref["secretName"] == v.HFTokenSecret.Name && ref["secretKey"] == v.HFTokenSecret.Key
}
