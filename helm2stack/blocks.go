package helm2stack

import (
	"bytes"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// ensure returns the block *p points to, creating it on first use.
func ensure[T any](p **T) *T {
	if *p == nil {
		*p = new(T)
	}
	return *p
}

// autoscalingOf is the engine's autoscaling block; the chart's is KEDA.
func autoscalingOf(e *v1alpha1.EngineConfig) *v1alpha1.Autoscaling {
	a := ensure(&e.Autoscaling)
	a.Type = "keda"
	return a
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
