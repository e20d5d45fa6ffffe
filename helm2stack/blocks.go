package helm2stack

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// The optional blocks of an engine, created on first use.

func vllmOf(e *v1alpha1.EngineConfig) *v1alpha1.VLLMConfig {
	if e.VLLMConfig == nil {
		e.VLLMConfig = &v1alpha1.VLLMConfig{}
	}
	return e.VLLMConfig
}

func lmcacheOf(e *v1alpha1.EngineConfig) *v1alpha1.LMCacheConfig {
	if e.LMCacheConfig == nil {
		e.LMCacheConfig = &v1alpha1.LMCacheConfig{}
	}
	return e.LMCacheConfig
}

func resourcesOf(e *v1alpha1.EngineConfig) *v1alpha1.Resources {
	if e.Resources == nil {
		e.Resources = &v1alpha1.Resources{}
	}
	return e.Resources
}

func storageOf(e *v1alpha1.EngineConfig) *v1alpha1.Storage {
	if e.Storage == nil {
		e.Storage = &v1alpha1.Storage{}
	}
	return e.Storage
}

func schedulingOf(s **v1alpha1.Scheduling) *v1alpha1.Scheduling {
	if *s == nil {
		*s = &v1alpha1.Scheduling{}
	}
	return *s
}

func podOf(e *v1alpha1.EngineConfig) *v1alpha1.PodConfig {
	if e.Pod == nil {
		e.Pod = &v1alpha1.PodConfig{}
	}
	return e.Pod
}

func probesOf(e *v1alpha1.EngineConfig) *v1alpha1.Probes {
	if e.Probes == nil {
		e.Probes = &v1alpha1.Probes{}
	}
	return e.Probes
}

func autoscalingOf(e *v1alpha1.EngineConfig) *v1alpha1.Autoscaling {
	if e.Autoscaling == nil {
		e.Autoscaling = &v1alpha1.Autoscaling{Type: "keda"}
	}
	return e.Autoscaling
}

func monitorOf(s *v1alpha1.ProductionStackSpec) *v1alpha1.ServiceMonitor {
	if s.Monitoring == nil {
		s.Monitoring = &v1alpha1.Monitoring{}
	}
	if s.Monitoring.ServiceMonitor == nil {
		s.Monitoring.ServiceMonitor = &v1alpha1.ServiceMonitor{}
	}
	return s.Monitoring.ServiceMonitor
}

func serverOf(s *v1alpha1.ProductionStackSpec) *v1alpha1.LMCacheServer {
	l := lmcacheOf(&s.EngineConfig)
	if l.Server == nil {
		l.Server = &v1alpha1.LMCacheServer{}
	}
	return l.Server
}

// setEnv sets variable name in env, replacing an entry of that name in place.
func setEnv(env *[]corev1.EnvVar, v corev1.EnvVar) {
	for i := range *env {
		if (*env)[i].Name == v.Name {
			(*env)[i] = v
			return
		}
	}
	*env = append(*env, v)
}

// overlayEngine folds a model's engine blocks into the top level's, field by
// field, as the function does for a models[] item: a model's scalar or list
// replaces the top level's, maps merge, and env merges by variable name.
func overlayEngine(top, item v1alpha1.EngineConfig) (v1alpha1.EngineConfig, error) {
	env := append([]corev1.EnvVar(nil), top.Env...)
	for _, v := range item.Env {
		setEnv(&env, v)
	}
	a, err := toMap(top)
	if err != nil {
		return top, err
	}
	b, err := toMap(item)
	if err != nil {
		return top, err
	}
	overlay(a, b)
	var out v1alpha1.EngineConfig
	j, err := json.Marshal(a)
	if err != nil {
		return top, err
	}
	d := json.NewDecoder(bytes.NewReader(j))
	d.DisallowUnknownFields()
	if err := d.Decode(&out); err != nil {
		return top, fmt.Errorf("cannot merge the model's settings into the stack's: %w", err)
	}
	out.Env = env
	return out, nil
}

func toMap(v any) (map[string]any, error) {
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	return m, json.Unmarshal(j, &m)
}

func overlay(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				overlay(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}
