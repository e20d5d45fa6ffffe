package resolve

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	sigsjson "sigs.k8s.io/json"

	"github.com/vllm-project/function-vllm-stack/internal/kubeapi"
	"github.com/vllm-project/function-vllm-stack/xrd/v1alpha1"
)

// crossplaneSpecFields are the spec fields Crossplane itself adds to an XR.
// They are not part of the ProductionStack API and are ignored when decoding.
var crossplaneSpecFields = []string{
	"crossplane", // v2 namespaced XRs keep Crossplane's machinery here.
	"claimRef",
	"compositionRef",
	"compositionRevisionRef",
	"compositionRevisionSelector",
	"compositionSelector",
	"compositionUpdatePolicy",
	"environmentConfigRefs",
	"publishConnectionDetailsTo",
	"resourceRefs",
	"writeConnectionSecretToRef",
}

// DecodeSpec decodes an XR's spec (as encoding/json decodes it into an any)
// into the typed API, and returns the spec as written too, without
// Crossplane's fields. Unknown fields are errors that
// name the field: `crossplane render` does not apply the XRD's schema, and a
// typo silently ignored is a stack that serves the wrong thing.
func DecodeSpec(written any) (*v1alpha1.ProductionStackSpec, map[string]any, error) {
	raw, ok := written.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("spec is missing: a ProductionStack needs spec.model or spec.models")
	}
	own := make(map[string]any, len(raw))
	for k, v := range raw {
		own[k] = v
	}
	for _, k := range crossplaneSpecFields {
		delete(own, k)
	}
	b, err := json.Marshal(own)
	if err != nil {
		return nil, nil, fmt.Errorf("cannot encode spec: %w", err)
	}
	spec := &v1alpha1.ProductionStackSpec{}
	if at, v := hugeExponent(own, reflect.TypeFor[v1alpha1.ProductionStackSpec](), "spec"); at != "" {
		return nil, nil, fmt.Errorf("cannot decode spec: %s %s is out of range: a Kubernetes quantity is from 1n to below 8Ei; use a value such as 4Gi or 500m", at, ClipQuote(v))
	}
	strict, err := sigsjson.UnmarshalStrict(b, spec)
	if err != nil {
		msg := specPathError(err.Error())
		if !strings.Contains(msg, "spec.") {
			// A type's own decoder (a quantity's, say) does not say
			// where it failed: find the field.
			if at, leaf := locate(own, reflect.TypeFor[v1alpha1.ProductionStackSpec](), "spec"); at != "" {
				msg = at + ": " + msg
				if leaf == reflect.TypeFor[resource.Quantity]() {
					msg += "; use a Kubernetes quantity such as 4Gi or 500m"
				}
			}
		}
		return nil, nil, fmt.Errorf("cannot decode spec: %s", msg)
	}
	if len(strict) > 0 {
		msgs := make([]string, 0, len(strict))
		for _, e := range strict {
			msgs = append(msgs, specPathError(e.Error()))
		}
		sort.Strings(msgs)
		return nil, nil, fmt.Errorf("spec has fields the ProductionStack API does not know: %s; check the spelling against `kubectl explain productionstack.spec`", strings.Join(msgs, "; "))
	}
	return spec, own, nil
}

// specPathError makes the decoder's field paths absolute ("spec.model.foo"
// rather than "model.foo") so the user finds the field in the manifest.
func specPathError(msg string) string {
	msg = strings.TrimPrefix(msg, "json: ")
	for _, p := range []string{`unknown field "`, `duplicate field "`} {
		msg = strings.ReplaceAll(msg, p, p+"spec.")
	}
	// "Go struct field VLLMConfig.vllmConfig.hfTokenSecret": the innermost
	// Go type, then the path from the spec.
	msg = goStructField.ReplaceAllString(msg, "spec.")
	// Inline structs show in the decoder's paths ("spec.EngineConfig.replicas",
	// "spec.env.valueFrom.secretKeyRef.LocalObjectReference.name"); the
	// user's manifest has no such level. JSON names start in lower case.
	msg = embeddedField.ReplaceAllString(msg, "")
	return typeErrorPath.ReplaceAllStringFunc(msg, func(m string) string {
		return goTypeLevel.ReplaceAllString(m, ".")
	})
}

var (
	goStructField = regexp.MustCompile(`Go struct field [A-Za-z0-9]+\.`)
	embeddedField = regexp.MustCompile(`(EngineConfig|Model)\.`)
	typeErrorPath = regexp.MustCompile(`into spec\.[^ ]* of type`)
	goTypeLevel   = regexp.MustCompile(`\.[A-Z][A-Za-z0-9]*\.`)
)

// locate finds the field of a JSON value v (as encoding/json decodes it into
// an any) that does not decode into type t, and the type it does not decode
// into; "" when every field decodes. Fields t does not have are the strict
// decoder's business and are skipped. path is v's path.
func locate(v any, t reflect.Type, path string) (string, reflect.Type) {
	at, lt, _ := findTyped(v, t, path, func(v any, t reflect.Type) (hit, stop bool) {
		if v == nil {
			return false, true
		}
		leaf := reflect.PointerTo(t).Implements(jsonUnmarshaler) || t.Kind() == reflect.Interface ||
			t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 ||
			t.Kind() != reflect.Struct && t.Kind() != reflect.Slice && t.Kind() != reflect.Map
		if leaf {
			b, err := json.Marshal(v)
			return err != nil || sigsjson.UnmarshalCaseSensitivePreserveInts(b, reflect.New(t).Interface()) != nil, true
		}
		_, isMap := v.(map[string]any)
		_, isList := v.([]any)
		if t.Kind() == reflect.Slice && !isList || t.Kind() != reflect.Slice && !isMap {
			return true, true // a value of another shape than t's
		}
		return false, false
	})
	return at, lt
}

// findTyped walks a JSON value v (as encoding/json decodes it into an any)
// beside the Go type t it decodes into, depth first and in key order, and
// returns the path, type and value of the first value visit reports a hit;
// "" when there is none. visit sees every value, with its pointer types
// dereferenced, and may stop the walk below it. The walk descends into
// structs (by JSON field name, skipping fields t does not have), slices and
// maps, where the value has their shape.
func findTyped(v any, t reflect.Type, path string, visit func(v any, t reflect.Type) (hit, stop bool)) (string, reflect.Type, any) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if hit, stop := visit(v, t); hit {
		return path, t, v
	} else if stop {
		return "", nil, nil
	}
	switch t.Kind() {
	case reflect.Struct:
		m, _ := v.(map[string]any)
		fields := specFields(t)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if ft, ok := fields[k]; ok {
				if at, ht, hv := findTyped(m[k], ft, path+"."+k, visit); at != "" {
					return at, ht, hv
				}
			}
		}
	case reflect.Slice:
		l, _ := v.([]any)
		for i, item := range l {
			if at, ht, hv := findTyped(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), visit); at != "" {
				return at, ht, hv
			}
		}
	case reflect.Map:
		m, _ := v.(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if at, ht, hv := findTyped(m[k], t.Elem(), path+"["+k+"]", visit); at != "" {
				return at, ht, hv
			}
		}
	}
	return "", nil, nil
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// specFields is jsonFields of t, worked out once per type: findTyped runs
// over the whole spec on every call.
func specFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := specFieldsCache.Load(t); ok {
		return f.(map[string]reflect.Type)
	}
	f := jsonFields(t, map[string]reflect.Type{})
	specFieldsCache.Store(t, f)
	return f
}

var specFieldsCache sync.Map // reflect.Type -> map[string]reflect.Type

// jsonFields adds the fields of struct type t, by JSON name, to fields;
// inline and embedded structs' fields count as t's.
func jsonFields(t reflect.Type, fields map[string]reflect.Type) map[string]reflect.Type {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported() && !f.Anonymous:
		case name == "" && (f.Anonymous || strings.Contains(opts, "inline")):
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				jsonFields(ft, fields)
			}
		case name == "":
			fields[f.Name] = f.Type
		default:
			fields[name] = f.Type
		}
	}
	return fields
}

// hugeExponent finds a string of v (as encoding/json decodes it into an any)
// that goes into a resource.Quantity of type t and whose exponent
// ParseQuantity refuses, before the decoder spends seconds parsing it; ""
// when there is none.
func hugeExponent(v any, t reflect.Type, path string) (string, string) {
	at, _, hv := findTyped(v, t, path, func(v any, t reflect.Type) (hit, stop bool) {
		if t != reflect.TypeFor[resource.Quantity]() {
			return false, false
		}
		s, ok := v.(string)
		if !ok {
			return false, true
		}
		_, err := ParseQuantity(s)
		return errors.Is(err, ErrQuantityExponent), true
	})
	s, _ := hv.(string)
	return at, s
}

// ClipQuote quotes a value for a message, cut to 64 characters (as the
// rules of internal/kubeapi quote them).
func ClipQuote(v string) string { return kubeapi.Quote(v) }

// Leaf is a field's name without its block when the message names it
// relative to one, as the fix repeats it; a full path (spec…) stays whole.
func Leaf(field string) string {
	if strings.HasPrefix(field, "spec") {
		return field
	}
	return field[strings.LastIndexByte(field, '.')+1:]
}
