package helm2stack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// node is one value of the values file at its full path, e.g.
// servingEngineSpec.modelSpec[1].replicaCount. Numbers are json.Number, so
// an integer never passes through a float.
type node struct {
	path string
	v    any
}

// parseValues reads a values file: YAML (or JSON) whose root is a map.
// An empty file is an empty map, as for helm.
func parseValues(b []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, fmt.Errorf("the values file is not YAML: %w", err)
	}
	if t := bytes.TrimSpace(j); len(t) == 0 || string(t) == "null" {
		return map[string]any{}, nil
	}
	d := json.NewDecoder(bytes.NewReader(j))
	d.UseNumber()
	var root any
	if err := d.Decode(&root); err != nil {
		return nil, fmt.Errorf("the values file is not YAML: %w", err)
	}
	m, ok := root.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the values file must be a map of keys (servingEngineSpec, routerSpec, ...), got %s", kindOf(root))
	}
	return m, nil
}

func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	}
	return fmt.Sprintf("%T", v)
}

func (n node) child(key string, v any) node {
	if n.path == "" {
		return node{path: key, v: v}
	}
	return node{path: n.path + "." + key, v: v}
}
func (n node) item(i int, v any) node { return node{path: fmt.Sprintf("%s[%d]", n.path, i), v: v} }

func (n node) wrongType(want string) error {
	return fmt.Errorf("%s must be %s, got %s", n.path, want, kindOf(n.v))
}

// empty reports whether the value is what helm treats as unset: null, "",
// false, 0, an empty map or list.
func (n node) empty() bool {
	switch v := n.v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case json.Number:
		f, err := v.Float64()
		return err == nil && f == 0
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

func (n node) str() (string, error) {
	s, ok := n.v.(string)
	if !ok {
		return "", n.wrongType("a string")
	}
	return s, nil
}

// scalar is a string or a number, as the chart's quantities are
// (requestCPU: 6, requestMemory: "16Gi", gpuMemoryUtilization: 0.9).
func (n node) scalar() (string, error) {
	switch v := n.v.(type) {
	case string:
		return v, nil
	case json.Number:
		return v.String(), nil
	}
	return "", n.wrongType("a string or a number")
}

func (n node) boolean() (bool, error) {
	b, ok := n.v.(bool)
	if !ok {
		return false, n.wrongType("true or false")
	}
	return b, nil
}

// int32 accepts an integer, or a string holding one (the chart quotes some
// ports and counts: workerHeartbeatTime: "30").
func (n node) int32() (int32, error) {
	var s string
	switch v := n.v.(type) {
	case json.Number:
		s = v.String()
	case string:
		s = strings.TrimSpace(v)
	default:
		return 0, n.wrongType("an integer")
	}
	i, err := strconv.ParseInt(s, 10, 64)
	if err != nil || i < math.MinInt32 || i > math.MaxInt32 {
		return 0, fmt.Errorf("%s must be an integer, got %q", n.path, s)
	}
	return int32(i), nil
}

func (n node) int32p() (*int32, error) {
	i, err := n.int32()
	if err != nil {
		return nil, err
	}
	return &i, nil
}

func (n node) strings() ([]string, error) {
	l, ok := n.v.([]any)
	if !ok {
		return nil, n.wrongType("a list of strings")
	}
	out := make([]string, 0, len(l))
	for i, e := range l {
		s, err := n.item(i, e).scalar()
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (n node) stringMap() (map[string]string, error) {
	m, ok := n.v.(map[string]any)
	if !ok {
		return nil, n.wrongType("a map of strings")
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		s, err := n.child(k, e).scalar()
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

// object decodes a Kubernetes-shaped value (tolerations, affinity, env,
// volumes, resources) strictly into its typed form.
func (n node) object(into any) error {
	b, err := json.Marshal(n.v)
	if err != nil {
		return fmt.Errorf("%s: %w", n.path, err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(into); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			at := n.path
			if te.Field != "" {
				at += "." + te.Field
			}
			return fmt.Errorf("%s must be %s, got %s", at, kindName(te.Type), jsonKind[te.Value])
		}
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if f, ok := strings.CutPrefix(msg, "unknown field "); ok {
			return fmt.Errorf("unknown key %s in %s: the chart (vllm-stack %s) has no such key; check its spelling against the chart's values.yaml", f, n.path, ChartVersion)
		}
		return fmt.Errorf("%s is not valid: %s", n.path, msg)
	}
	return nil
}

// jsonKind names the kinds of encoding/json's type errors.
var jsonKind = map[string]string{"object": "a map", "array": "a list", "string": "a string", "number": "a number", "bool": "a boolean"}

// kindName says what a Go type holds, in the words of a values file.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Struct, reflect.Map:
		if t.String() == "intstr.IntOrString" {
			return "a number or a string"
		}
		return "a map"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Pointer:
		return kindName(t.Elem())
	case reflect.Interface:
		return "a value"
	}
	return "a number"
}

// fields returns the map's entries as nodes, sorted by key.
func (n node) fields() (map[string]node, error) {
	m, ok := n.v.(map[string]any)
	if !ok {
		return nil, n.wrongType("a map")
	}
	out := make(map[string]node, len(m))
	for k, v := range m {
		out[k] = n.child(k, v)
	}
	return out, nil
}
