package helm2stack

import (
	"cmp"
	"fmt"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// Conversions of LoRA adapters.

// loraAdapter is a loraAdapters item: a LoraAdapter object of the LoRA
// controller in the chart, an adapter loaded at start-up here.
type loraAdapter struct {
	path      string
	baseModel string
	adapter   v1alpha1.LoRAAdapter
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
		a := loraAdapter{path: item.path, baseModel: v.BaseModel, adapter: v1alpha1.LoRAAdapter{Name: cmp.Or(src.AdapterName, v.Name)}}
		switch src.Type {
		case "local":
			a.adapter.Path = src.AdapterPath
		case "huggingface":
			a.adapter.Path = src.Repository
		default:
			c.res.drop(item.path, "not supported: adapters loaded at start-up (model.loraAdapters) come from a local path or Hugging Face; LoraAdapter objects of other sources need the LoRA controller")
			return nil
		}
		if a.adapter.Path == "" || a.adapter.Name == "" {
			return fmt.Errorf("%s.adapterSource needs adapterName and, for type %s, %s", item.path, src.Type, map[string]string{"local": "adapterPath", "huggingface": "repository"}[src.Type])
		}
		if src.Credentials != nil || v.VLLMAPIKey != nil || v.DeploymentConfig != nil || len(v.Labels) > 0 || src.Pattern != "" || src.MaxAdapters != nil {
			c.res.note(item.path, "loaded at start-up by every replica (--lora-modules); the LoRA controller's placement, credentials, pattern, API key and LoraAdapter labels do not apply")
		}
		c.adapters = append(c.adapters, a)
		return nil
	})
}

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
			target.m.LoRAAdapters = append(target.m.LoRAAdapters, a.adapter)
		}
	}
	return nil
}
