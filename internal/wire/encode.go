package wire

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Encode is EncodeViaJSON without the JSON in between: it walks the
// typed object and builds the Struct that encoding/json's output, decoded
// and pruned by EncodeViaJSON, would give. Writing JSON and reading it back
// took a third of RunFunction's time.
//
// It follows encoding/json's rules (json tags, omitempty, embedded structs,
// invalid UTF-8 written as U+FFFD, []byte as base64, numbers as float64);
// a value that marshals itself (a Quantity, an IntOrString, a Time) still
// goes through its MarshalJSON and the decoder, and so does any type the
// walk does not know how to take (see collectFields): EncodeViaJSON stays the
// definition, and TestEncoderIsJSON and FuzzEncoder hold the two together.
func Encode(o runtime.Object) (*structpb.Struct, error) {
	var v reflect.Value
	if u, ok := o.(*unstructured.Unstructured); ok {
		v = reflect.ValueOf(u.Object) // what its MarshalJSON writes
	} else {
		v = reflect.ValueOf(o)
	}
	val, err := encodeValue(v, true)
	if err != nil {
		return nil, fmt.Errorf("cannot encode %T: %w", o, err)
	}
	s := val.GetStructValue()
	if s == nil {
		return nil, fmt.Errorf("cannot encode %T: not an object", o)
	}
	delete(s.Fields, "status")
	return s, nil
}

var (
	jsonMarshaler   = reflect.TypeFor[json.Marshaler]()
	textMarshaler   = reflect.TypeFor[encoding.TextMarshaler]()
	zeroer          = reflect.TypeFor[interface{ IsZero() bool }]()
	quantityType    = reflect.TypeFor[resource.Quantity]()
	timeType        = reflect.TypeFor[metav1.Time]()
	intOrStringType = reflect.TypeFor[intstr.IntOrString]()
)

// encodeValue is v as encoding/json writes it and decoder.value(prune) reads
// it back.
func encodeValue(v reflect.Value, prune bool) (*structpb.Value, error) {
	if !v.IsValid() {
		return structpb.NewNullValue(), nil
	}
	t := v.Type()
	switch t {
	case quantityType: // MarshalJSON writes its String, quoted
		q := v.Interface().(resource.Quantity)
		return structpb.NewStringValue(q.String()), nil
	case timeType: // MarshalJSON: null when zero, else RFC 3339 in UTC
		tm := v.Interface().(metav1.Time)
		if tm.IsZero() {
			return structpb.NewNullValue(), nil
		}
		return structpb.NewStringValue(tm.UTC().Format(time.RFC3339)), nil
	case intOrStringType: // MarshalJSON: the int or the string
		switch is := v.Interface().(intstr.IntOrString); is.Type {
		case intstr.Int:
			return structpb.NewNumberValue(float64(is.IntVal)), nil
		case intstr.String:
			return structpb.NewStringValue(validUTF8(is.StrVal)), nil
		}
	}
	info := infoOf(t)
	if info.marshals || (t.Kind() != reflect.Pointer && v.CanAddr() && info.ptrMarshals) {
		return viaJSON(v, prune)
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return structpb.NewNullValue(), nil
		}
		return encodeValue(v.Elem(), prune)
	case reflect.Struct:
		if !info.walkable {
			return viaJSON(v, prune)
		}
		s := &structpb.Struct{Fields: make(map[string]*structpb.Value, len(info.fields))}
		for _, f := range info.fields {
			fv := v.FieldByIndex(f.index) // no embedded pointers: see collectFields
			if (f.omitEmpty && isEmptyValue(fv)) || (f.omitZero && omitZeroDrops(fv)) {
				continue
			}
			e, err := encodeValue(fv, prune)
			if err != nil {
				return nil, err
			}
			if !prune || !empty(f.name, e) {
				s.Fields[f.name] = e
			}
		}
		return structpb.NewStructValue(s), nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String || infoOf(t.Key()).marshals {
			return viaJSON(v, prune)
		}
		if v.IsNil() {
			return structpb.NewNullValue(), nil
		}
		for it := v.MapRange(); it.Next(); {
			if !utf8.ValidString(it.Key().String()) {
				// Two keys may then read the same: encoding/json writes
				// them in sorted order, and the last one wins.
				return viaJSON(v, prune)
			}
		}
		s := &structpb.Struct{Fields: make(map[string]*structpb.Value, v.Len())}
		for it := v.MapRange(); it.Next(); {
			e, err := encodeValue(it.Value(), prune)
			if err != nil {
				return nil, err
			}
			key := it.Key().String()
			if !prune || !empty(key, e) {
				s.Fields[key] = e
			}
		}
		return structpb.NewStructValue(s), nil
	case reflect.Slice:
		if v.IsNil() {
			return structpb.NewNullValue(), nil
		}
		if elem := infoOf(t.Elem()); t.Elem().Kind() == reflect.Uint8 && !elem.marshals && !elem.ptrMarshals {
			return structpb.NewStringValue(base64.StdEncoding.EncodeToString(v.Bytes())), nil
		}
		return encodeList(v, prune)
	case reflect.Array:
		return encodeList(v, prune)
	case reflect.String:
		return structpb.NewStringValue(validUTF8(v.String())), nil
	case reflect.Bool:
		return structpb.NewBoolValue(v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return structpb.NewNumberValue(float64(v.Int())), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return structpb.NewNumberValue(float64(v.Uint())), nil
	}
	// Floats (encoding/json writes them in forms that need care), and
	// whatever else: the JSON path.
	return viaJSON(v, prune)
}

// encodeList encodes the items of a slice or array: the decoder prunes an
// item only when it is an object, and never an array of arrays' items.
func encodeList(v reflect.Value, prune bool) (*structpb.Value, error) {
	l := &structpb.ListValue{Values: make([]*structpb.Value, 0, v.Len())}
	for i := range v.Len() {
		e, err := encodeValue(v.Index(i), prune)
		if err != nil {
			return nil, err
		}
		if prune && e.GetStructValue() == nil {
			// Not an object: the decoder read it without pruning, which
			// matters only for an array (of arrays), encoded again as such.
			if e.GetListValue() != nil {
				if e, err = encodeValue(v.Index(i), false); err != nil {
					return nil, err
				}
			}
		}
		l.Values = append(l.Values, e)
	}
	return structpb.NewListValue(l), nil
}

// viaJSON is the JSON path for one value: encoding/json, then the decoder.
func viaJSON(v reflect.Value, prune bool) (*structpb.Value, error) {
	// Through a pointer when the value is addressable, as it is inside the
	// whole object: encoding/json then uses methods on the pointer too.
	x := v.Interface()
	if v.CanAddr() {
		x = v.Addr().Interface()
	}
	b, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	d := decoder{data: string(b)}
	val, err := d.value(prune)
	if err == nil && d.pos != len(b) {
		err = d.errorf("trailing data")
	}
	return val, err
}

// validUTF8 is s as encoding/json writes it: each byte of an invalid
// sequence becomes U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// isEmptyValue is encoding/json's test for omitempty.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0 // -0 too
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}

// omitZeroDrops is encoding/json's test for omitzero: the type's IsZero method
// where it has one (on the pointer too), else the zero value.
func omitZeroDrops(v reflect.Value) bool {
	t := v.Type()
	switch infoOf(t).zero {
	case zeroOnInterface:
		return v.IsNil() || (v.Elem().Kind() == reflect.Pointer && v.Elem().IsNil()) || v.Interface().(interface{ IsZero() bool }).IsZero()
	case zeroOnPointerType:
		return v.IsNil() || v.Interface().(interface{ IsZero() bool }).IsZero()
	case zeroOnValue:
		return v.Interface().(interface{ IsZero() bool }).IsZero()
	case zeroOnPointer:
		if !v.CanAddr() {
			c := reflect.New(t).Elem()
			c.Set(v)
			v = c
		}
		return v.Addr().Interface().(interface{ IsZero() bool }).IsZero()
	}
	return v.IsZero()
}

// Where a type's IsZero method is, as omitzero looks for it.
type zeroMethod int

const (
	zeroNone zeroMethod = iota
	zeroOnInterface
	zeroOnPointerType
	zeroOnValue
	zeroOnPointer
)

func zeroMethodOf(t reflect.Type) zeroMethod {
	switch {
	case t.Kind() == reflect.Interface && t.Implements(zeroer):
		return zeroOnInterface
	case t.Kind() == reflect.Pointer && t.Implements(zeroer):
		return zeroOnPointerType
	case t.Implements(zeroer):
		return zeroOnValue
	case reflect.PointerTo(t).Implements(zeroer):
		return zeroOnPointer
	}
	return zeroNone
}

// A jsonField is a field encoding/json writes: its name, where it is (an
// index path through embedded structs) and whether it is omitted when
// empty.
type jsonField struct {
	name      string
	index     []int
	omitEmpty bool
	omitZero  bool
}

// typeInfo is what the walk needs to know of a type, worked out once: asking
// reflect whether a type implements an interface walks its method set, and
// took a third of the walk when done for every value.
type typeInfo struct {
	marshals    bool // encoding/json lets it write itself (json or text)
	ptrMarshals bool // so does a pointer to it
	zero        zeroMethod
	// The fields encoding/json writes of a struct, in its order, when the
	// walk can take the struct (walkable); see collectFields.
	fields   []jsonField
	walkable bool
}

var typeInfos sync.Map // reflect.Type -> *typeInfo

func infoOf(t reflect.Type) *typeInfo {
	if i, ok := typeInfos.Load(t); ok {
		return i.(*typeInfo)
	}
	info := &typeInfo{
		marshals:    implementsMarshaler(t),
		ptrMarshals: t.Kind() != reflect.Pointer && implementsMarshaler(reflect.PointerTo(t)),
		zero:        zeroMethodOf(t),
	}
	if t.Kind() == reflect.Struct {
		info.fields, info.walkable = collectFields(t, nil, map[reflect.Type]bool{})
		if info.walkable {
			info.walkable = uniqueNames(info.fields)
		}
	}
	typeInfos.Store(t, info)
	return info
}

func implementsMarshaler(t reflect.Type) bool {
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler)
}

// collectFields are the fields encoding/json writes of struct type t, with
// their index paths below index; false for a struct the walk leaves to
// encoding/json: one with a ",string" option, an embedded pointer (nil ones
// are skipped, not written as null), or an embedded type that marshals
// itself.
func collectFields(t reflect.Type, index []int, seen map[reflect.Type]bool) ([]jsonField, bool) {
	if seen[t] { // an embedding cycle
		return nil, false
	}
	seen[t] = true
	defer delete(seen, t)
	var out []jsonField
	for i := range t.NumField() {
		sf := t.Field(i)
		tag := sf.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if hasOption(opts, "string") {
			return nil, false
		}
		idx := append(slices.Clone(index), i)
		if sf.Anonymous && name == "" {
			ft := sf.Type
			if ft.Kind() == reflect.Pointer {
				return nil, false
			}
			if ft.Kind() == reflect.Struct && (implementsMarshaler(ft) || implementsMarshaler(reflect.PointerTo(ft))) {
				return nil, false // its methods are the outer type's: the JSON path
			}
			if ft.Kind() == reflect.Struct {
				inner, ok := collectFields(ft, idx, seen)
				if !ok {
					return nil, false
				}
				out = append(out, inner...)
				continue
			}
			if !sf.IsExported() {
				continue
			}
		} else if !sf.IsExported() {
			continue
		}
		if name == "" {
			name = sf.Name
		}
		out = append(out, jsonField{name, idx, hasOption(opts, "omitempty"), hasOption(opts, "omitzero")})
	}
	return out, true
}

func hasOption(opts, o string) bool { return strings.Contains(","+opts+",", ","+o+",") }

// uniqueNames: encoding/json resolves fields of one name (the shallowest,
// then the tagged one, else none); the walk leaves such types to it.
func uniqueNames(fields []jsonField) bool {
	seen := make(map[string]bool, len(fields))
	for _, f := range fields {
		if seen[f.name] {
			return false
		}
		seen[f.name] = true
	}
	return true
}
