package resolve

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"

	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// MergeConfig overlays an item's engine blocks on the top-level ones, field by
// field: a field the item sets wins, a block the item sets is merged into the
// top-level block, env is merged by variable name. Neither input is changed.
func MergeConfig(base, over v1alpha1.EngineConfig) v1alpha1.EngineConfig {
	out := base
	overlay(reflect.ValueOf(&out).Elem(), reflect.ValueOf(over))
	out.Env = mergeEnv(base.Env, over.Env)
	return out
}

// overlay copies every field that src sets into dst. Pointers to structs are
// merged recursively into a fresh copy, so dst never aliases what it was
// given; any other pointer, slice, map or non-empty string replaces dst's.
func overlay(dst, src reflect.Value) {
	for i := range src.NumField() {
		s, d := src.Field(i), dst.Field(i)
		switch s.Kind() {
		case reflect.Pointer:
			if s.IsNil() {
				continue
			}
			if s.Elem().Kind() == reflect.Struct && !d.IsNil() {
				merged := reflect.New(s.Elem().Type())
				merged.Elem().Set(d.Elem())
				overlay(merged.Elem(), s.Elem())
				d.Set(merged)
				continue
			}
			d.Set(s)
		case reflect.Slice, reflect.Map:
			if !s.IsNil() {
				d.Set(s)
			}
		case reflect.Struct:
			overlay(d, s)
		default:
			if !s.IsZero() {
				d.Set(s)
			}
		}
	}
}

// mergeEnv returns base with every variable of over replacing the one of the
// same name in place, and the others appended in order.
func mergeEnv(base, over []corev1.EnvVar) []corev1.EnvVar {
	if len(over) == 0 {
		return base
	}
	out := make([]corev1.EnvVar, len(base), len(base)+len(over))
	copy(out, base)
	return OverrideEnv(out, over)
}

// OverrideEnv replaces variables of env by name with those of over and
// appends the rest. It writes into env.
func OverrideEnv(env, over []corev1.EnvVar) []corev1.EnvVar {
	index := make(map[string]int, len(env))
	for i, e := range env {
		index[e.Name] = i
	}
	for _, e := range over {
		if i, ok := index[e.Name]; ok {
			env[i] = e
			continue
		}
		index[e.Name] = len(env)
		env = append(env, e)
	}
	return env
}

// Or returns v, or def when v is empty.
func Or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// Enabled reports whether an optional switch is on.
func Enabled(b *bool) bool { return b != nil && *b }
