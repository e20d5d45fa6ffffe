package wire

import "google.golang.org/protobuf/types/known/structpb"

// Observed objects are decoded only in part. Crossplane sends them whole, as
// the API server returns them: a Deployment is mostly its pod template and
// managedFields, which the function never reads, and decoding them took
// more time than composing the stack.

// A FieldSet names the fields of an object to decode; a nil FieldSet decodes
// the whole value.
type FieldSet map[string]FieldSet

// ObservedFields are the fields readiness and status read of an observed
// composed resource. Add any other field they come to need.
var ObservedFields = FieldSet{
	"apiVersion": nil,
	"kind":       nil,
	"metadata":   {"name": nil, "namespace": nil, "generation": nil, "labels": nil, "annotations": nil},
	"spec":       {"replicas": nil},
	"status":     nil,
}

// CompositeFields are the fields the function reads of the observed XR: its
// identity and spec. Add any other field it comes to need.
var CompositeFields = FieldSet{
	"apiVersion": nil,
	"kind":       nil,
	"metadata":   {"name": nil, "namespace": nil, "uid": nil, "labels": nil, "annotations": nil},
	"spec":       nil,
}

// containerStatusFields are the fields the status reads of a container's
// status. Not its resources: a quantity can take apimachinery seconds to
// parse (1e-17170000), and a pod of a broken or hostile cluster could hold
// many.
var containerStatusFields = FieldSet{
	"name": nil, "image": nil, "ready": nil, "started": nil, "state": nil, "lastState": nil,
}

// PodFields are the fields the status reads of a pod.
var PodFields = FieldSet{
	"apiVersion": nil,
	"kind":       nil,
	"metadata":   {"name": nil, "namespace": nil, "labels": nil, "annotations": nil, "deletionTimestamp": nil},
	"status": {
		"phase": nil, "reason": nil, "message": nil, "conditions": nil,
		"containerStatuses": containerStatusFields, "initContainerStatuses": containerStatusFields,
	},
}

// DecodeFields decodes the fields fs of s into the map form of an
// unstructured object. The fields of a list's objects are selected alike.
func DecodeFields(s *structpb.Struct, fs FieldSet) map[string]any {
	m := make(map[string]any, len(fs))
	for k, sub := range fs {
		v, ok := s.GetFields()[k]
		if !ok {
			continue
		}
		if o := v.GetStructValue(); o != nil && sub != nil {
			m[k] = DecodeFields(o, sub)
			continue
		}
		if l := v.GetListValue(); l != nil && sub != nil {
			items := make([]any, 0, len(l.GetValues()))
			for _, it := range l.GetValues() {
				if o := it.GetStructValue(); o != nil {
					items = append(items, DecodeFields(o, sub))
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
