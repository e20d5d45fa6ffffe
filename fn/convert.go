package fn

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/runtime"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/resource/composite"
)

// composedStruct converts a typed object into the protobuf Struct of a desired
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
func composedStruct(o runtime.Object) (*structpb.Struct, error) {
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

// Observed objects are decoded only in part. Crossplane sends them whole, as
// the API server returns them: a Deployment is mostly its pod template and
// managedFields, which the function never reads, and decoding them took
// more time than composing the stack.

// A fieldSet names the fields of an object to decode; a nil fieldSet decodes
// the whole value.
type fieldSet map[string]fieldSet

// observedFields are the fields readiness and status read of an observed
// composed resource. Add any other field they come to need.
var observedFields = fieldSet{
	"apiVersion": nil,
	"kind":       nil,
	"metadata":   {"name": nil, "namespace": nil, "generation": nil, "labels": nil, "annotations": nil},
	"spec":       {"replicas": nil},
	"status":     nil,
}

// compositeFields are the fields the function reads of the observed XR: its
// identity and spec. Add any other field it comes to need.
var compositeFields = fieldSet{
	"apiVersion": nil,
	"kind":       nil,
	"metadata":   {"name": nil, "namespace": nil, "uid": nil, "labels": nil, "annotations": nil},
	"spec":       nil,
}

// containerStatusFields are the fields the status reads of a container's
// status. Not its resources: a quantity can take apimachinery seconds to
// parse (1e-17170000), and a pod of a broken or hostile cluster could hold
// many.
var containerStatusFields = fieldSet{
	"name": nil, "image": nil, "ready": nil, "started": nil, "state": nil, "lastState": nil,
}

// podFields are the fields the status reads of a pod.
var podFields = fieldSet{
	"apiVersion": nil,
	"kind":       nil,
	"metadata":   {"name": nil, "namespace": nil, "labels": nil, "annotations": nil, "deletionTimestamp": nil},
	"status": {
		"phase": nil, "reason": nil, "message": nil, "conditions": nil,
		"containerStatuses": containerStatusFields, "initContainerStatuses": containerStatusFields,
	},
}

// decodeFields decodes the fields fs of s into the map form of an
// unstructured object. The fields of a list's objects are selected alike.
func decodeFields(s *structpb.Struct, fs fieldSet) map[string]any {
	m := make(map[string]any, len(fs))
	for k, sub := range fs {
		v, ok := s.GetFields()[k]
		if !ok {
			continue
		}
		if o := v.GetStructValue(); o != nil && sub != nil {
			m[k] = decodeFields(o, sub)
			continue
		}
		if l := v.GetListValue(); l != nil && sub != nil {
			items := make([]any, 0, len(l.GetValues()))
			for _, it := range l.GetValues() {
				if o := it.GetStructValue(); o != nil {
					items = append(items, decodeFields(o, sub))
				} else {
					items = append(items, it.AsInterface())
				}
			}
			m[k] = items
			continue
		}
		m[k] = v.AsInterface()
	}
	return m
}

// observedComposite returns the observed XR, as
// request.GetObservedCompositeResource does, with only compositeFields.
func observedComposite(req *fnv1.RunFunctionRequest) *resource.Composite {
	xr := composite.New()
	xr.SetUnstructuredContent(decodeFields(req.GetObserved().GetComposite().GetResource(), compositeFields))
	cds := req.GetObserved().GetComposite().GetConnectionDetails()
	if cds == nil {
		cds = resource.ConnectionDetails{}
	}
	return &resource.Composite{Resource: xr, ConnectionDetails: cds}
}

// observedComposed returns the observed composed resources of req, as
// request.GetObservedComposedResources does, with only observedFields.
func observedComposed(req *fnv1.RunFunctionRequest) map[resource.Name]resource.ObservedComposed {
	ocds := make(map[resource.Name]resource.ObservedComposed, len(req.GetObserved().GetResources()))
	for name, r := range req.GetObserved().GetResources() {
		cd := composed.New()
		cd.SetUnstructuredContent(decodeFields(r.GetResource(), observedFields))
		cds := r.GetConnectionDetails()
		if cds == nil {
			cds = resource.ConnectionDetails{}
		}
		ocds[resource.Name(name)] = resource.ObservedComposed{Resource: cd, ConnectionDetails: cds}
	}
	return ocds
}

// requiredResources returns the resources Crossplane sent for requirement,
// as they are.
func requiredResources(req *fnv1.RunFunctionRequest, requirement string) []*structpb.Struct {
	items := req.GetRequiredResources()[requirement].GetItems()
	rs := make([]*structpb.Struct, 0, len(items))
	for _, r := range items {
		rs = append(rs, r.GetResource())
	}
	return rs
}
