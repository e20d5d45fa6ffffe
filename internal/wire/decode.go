package wire

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime"
)

// EncodeViaJSON converts a typed object into the protobuf Struct of a desired
// composed resource, holding only the fields the function has an opinion
// about.
//
// Crossplane applies desired resources with server-side apply, so every field
// sent is a field claimed. The object is encoded with encoding/json, which
// drops zero numbers and false booleans through the API types' omitempty tags
// (go-json-experiment, which composed.From uses, keeps hostPort: 0,
// paused: false, successThreshold: 0, a zero status). It leaves only nulls
// (creationTimestamp) and empty objects of non-pointer structs (status: {},
// resources: {}); the decoder below prunes those.
//
// The JSON is decoded straight into a Struct: decoding it into a
// map[string]any and converting that with structpb.NewStruct builds every
// value twice, and took most of the function's time.
func EncodeViaJSON(o runtime.Object) (*structpb.Struct, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("cannot encode %T: %w", o, err)
	}
	// One string for the whole document: the decoded strings are slices of
	// it rather than copies.
	d := decoder{data: string(b)}
	s, err := d.object(true)
	if err == nil && d.pos != len(b) {
		err = d.errorf("trailing data")
	}
	if err != nil {
		return nil, fmt.Errorf("cannot decode %T: %w", o, err)
	}
	// The function never has an opinion on a composed object's status, and
	// some status types have fields without omitempty (a PodDisruptionBudget's
	// currentHealthy: 0): sending them would claim fields the controllers own.
	delete(s.Fields, "status")
	return s, nil
}

// keepEmpty names the objects whose presence is meaningful even when empty:
// `emptyDir: {}` is a volume.
var keepEmpty = map[string]bool{"emptyDir": true}

// decoder decodes the compact JSON that encoding/json.Marshal writes into
// structpb values: numbers become float64 as encoding/json decodes them into
// an any.
//
// With prune, an object drops its null members and its members that are
// objects left empty by pruning (except keepEmpty). Items of arrays are
// pruned when they are objects, and kept whatever they are: only objects
// lose members.
type decoder struct {
	data string
	pos  int
}

func (d *decoder) errorf(format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", d.pos, fmt.Sprintf(format, args...))
}

func (d *decoder) object(prune bool) (*structpb.Struct, error) {
	if !d.consume('{') {
		return nil, d.errorf("want an object")
	}
	s := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	if d.consume('}') {
		return s, nil
	}
	for {
		key, err := d.string()
		if err != nil {
			return nil, err
		}
		if !d.consume(':') {
			return nil, d.errorf("want ':'")
		}
		v, err := d.value(prune)
		if err != nil {
			return nil, err
		}
		if !prune || !empty(key, v) {
			s.Fields[key] = v
		}
		if d.consume('}') {
			return s, nil
		}
		if !d.consume(',') {
			return nil, d.errorf("want ',' or '}'")
		}
	}
}

// empty says whether prune drops member key of value v.
func empty(key string, v *structpb.Value) bool {
	switch k := v.GetKind().(type) {
	case *structpb.Value_NullValue:
		return true
	case *structpb.Value_StructValue:
		return len(k.StructValue.GetFields()) == 0 && !keepEmpty[key]
	}
	return false
}

func (d *decoder) array(prune bool) (*structpb.ListValue, error) {
	if !d.consume('[') {
		return nil, d.errorf("want an array")
	}
	l := &structpb.ListValue{}
	if d.consume(']') {
		return l, nil
	}
	for {
		// Arrays of arrays are never pruned.
		v, err := d.value(prune && d.peek() == '{')
		if err != nil {
			return nil, err
		}
		l.Values = append(l.Values, v)
		if d.consume(']') {
			return l, nil
		}
		if !d.consume(',') {
			return nil, d.errorf("want ',' or ']'")
		}
	}
}

func (d *decoder) value(prune bool) (*structpb.Value, error) {
	switch c := d.peek(); {
	case c == '{':
		s, err := d.object(prune)
		if err != nil {
			return nil, err
		}
		return structpb.NewStructValue(s), nil
	case c == '[':
		l, err := d.array(prune)
		if err != nil {
			return nil, err
		}
		return structpb.NewListValue(l), nil
	case c == '"':
		s, err := d.string()
		if err != nil {
			return nil, err
		}
		return structpb.NewStringValue(s), nil
	case d.literal("null"):
		return structpb.NewNullValue(), nil
	case d.literal("true"):
		return structpb.NewBoolValue(true), nil
	case d.literal("false"):
		return structpb.NewBoolValue(false), nil
	case c == '-' || c >= '0' && c <= '9':
		start := d.pos
		for d.pos < len(d.data) && isNumberByte(d.data[d.pos]) {
			d.pos++
		}
		f, err := strconv.ParseFloat(d.data[start:d.pos], 64)
		if err != nil {
			return nil, d.errorf("bad number: %v", err)
		}
		return structpb.NewNumberValue(f), nil
	}
	return nil, d.errorf("unexpected input")
}

// string decodes a string. Strings without escapes, most of them, are
// slices of the document; others are unquoted by encoding/json.
func (d *decoder) string() (string, error) {
	if !d.consume('"') {
		return "", d.errorf("want a string")
	}
	start := d.pos
	escaped := false
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case '\\':
			escaped = true
			d.pos += 2
			continue
		case '"':
			d.pos++
			if !escaped {
				return d.data[start : d.pos-1], nil
			}
			var s string
			if err := json.Unmarshal([]byte(d.data[start-1:d.pos]), &s); err != nil {
				return "", d.errorf("bad string: %v", err)
			}
			return s, nil
		}
		d.pos++
	}
	return "", d.errorf("unterminated string")
}

func (d *decoder) peek() byte {
	if d.pos < len(d.data) {
		return d.data[d.pos]
	}
	return 0
}

func (d *decoder) consume(c byte) bool {
	if d.peek() == c {
		d.pos++
		return true
	}
	return false
}

func (d *decoder) literal(lit string) bool {
	if strings.HasPrefix(d.data[d.pos:], lit) {
		d.pos += len(lit)
		return true
	}
	return false
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
