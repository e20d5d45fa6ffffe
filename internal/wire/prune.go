package wire

import (
	"errors"

	"google.golang.org/protobuf/encoding/protowire"
)

// A request carries every observed object whole: a Deployment's pod
// template, every object's managedFields and ownerReferences, the XR's own
// status and managedFields. The function reads a few fields of each
// (ObservedFields, CompositeFields, PodFields), yet the gRPC server's
// proto.Unmarshal builds a structpb value for every field of every object,
// and that was most of a steady-state call's decode (issue 34). PruneRequest
// drops, in the wire form, the fields of observed and required objects that
// DecodeFields would drop, so they are never decoded; what the function reads
// is byte for byte what it read before. The desired state, the Input, the
// context and the credentials are kept whole: the response carries the
// desired state and the context on.

// Field numbers of apiextensions.fn.proto.v1 (run_function.proto) and
// google.protobuf's struct.proto.
const (
	requestObserved            = 2 // RunFunctionRequest.observed (State)
	requestRequiredResources   = 8 // RunFunctionRequest.required_resources (map<string, Resources>)
	stateComposite             = 1 // State.composite (Resource)
	stateResources             = 2 // State.resources (map<string, Resource>)
	resourcesItems             = 1 // Resources.items (repeated Resource)
	resourceResource           = 1 // Resource.resource (Struct)
	mapKeyField, mapValueField = 1, 2
	structFields               = 1 // Struct.fields (map<string, Value>)
	valueStruct                = 5 // Value.struct_value
	valueList                  = 6 // Value.list_value (ListValue)
	listValues                 = 1 // ListValue.values (repeated Value)
)

// keptFields are what the function reads of an observed composed resource
// (ObservedFields) and, whole, every field of the object a change of
// topology keeps as it is observed (stack/transition/moves.go keptObject: the
// old workload, its Service, claim, chat template, the router, a routing
// layer's objects): its spec, data, rules, subjects, roleRef and the
// like. Only the metadata the cluster and Crossplane write (managedFields,
// ownerReferences, uid, resourceVersion, timestamps) is dropped, which is
// most of an object's size besides its spec, but for the owners of
// spec.replicas (replicasOwners): which field managers own it decides when
// an autoscaler has taken a Deployment's replicas over (stack/transition/handover.go).
var keptFields = FieldSet{
	"apiVersion": nil,
	"kind":       nil,
	"metadata":   keptMetadata,
	"spec":       nil,
	"status":     nil,
	// ConfigMap, ServiceAccount, Role and RoleBinding keep these.
	"data": nil, "binaryData": nil, "immutable": nil,
	"secrets": nil, "imagePullSecrets": nil, "automountServiceAccountToken": nil,
	"rules": nil, "subjects": nil, "roleRef": nil,
}

// keptMetadata is ObservedFields' metadata and, of each managedFields
// entry, its manager, operation and subresource, and whether it owns
// spec.replicas.
var keptMetadata = func() FieldSet {
	m := FieldSet{"managedFields": replicasOwnerFields}
	for k, v := range ObservedFields["metadata"] {
		m[k] = v
	}
	return m
}()

var replicasOwnerFields = FieldSet{
	"manager": nil, "operation": nil, "subresource": nil,
	"fieldsV1": {"f:spec": {"f:replicas": nil}},
}

// RequiredFields are what the function reads of a required resource: a
// pod's PodFields, which hold a CRD's kind, apiVersion and metadata.name.
var RequiredFields = PodFields

// errMalformed: the wire form does not parse; proto.Unmarshal says why.
var errMalformed = errors.New("malformed wire form")

// PruneRequest returns the wire form of a RunFunctionRequest without the
// fields of observed and required objects the function does not read. An
// error says b is not well-formed; it is then decoded as it is, and
// proto.Unmarshal says what is wrong.
func PruneRequest(b []byte) ([]byte, error) {
	return rewrite(make([]byte, 0, len(b)), b, func(dst []byte, num protowire.Number, v []byte) ([]byte, action, error) {
		switch num {
		case requestObserved:
			return replaced(rewrite(dst, v, pruneState))
		case requestRequiredResources:
			return replaced(rewrite(dst, v, mapValue(func(dst, v []byte) ([]byte, error) {
				return rewrite(dst, v, func(dst []byte, num protowire.Number, v []byte) ([]byte, action, error) {
					if num != resourcesItems {
						return dst, keep, nil
					}
					return replaced(pruneResource(dst, v, RequiredFields))
				})
			})))
		}
		return dst, keep, nil
	})
}

// pruneState prunes the observed XR to CompositeFields and each observed
// composed resource to ObservedFields.
func pruneState(dst []byte, num protowire.Number, v []byte) ([]byte, action, error) {
	switch num {
	case stateComposite:
		return replaced(pruneResource(dst, v, CompositeFields))
	case stateResources:
		return replaced(rewrite(dst, v, mapValue(func(dst, v []byte) ([]byte, error) { return pruneResource(dst, v, keptFields) })))
	}
	return dst, keep, nil
}

// pruneResource prunes a Resource's object; its connection details and
// readiness stay.
func pruneResource(dst, v []byte, fs FieldSet) ([]byte, error) {
	return rewrite(dst, v, func(dst []byte, num protowire.Number, v []byte) ([]byte, action, error) {
		if num != resourceResource {
			return dst, keep, nil
		}
		return replaced(pruneStruct(dst, v, fs))
	})
}

// pruneStruct keeps the members of a Struct that DecodeFields keeps for fs,
// each pruned as DecodeFields prunes it.
func pruneStruct(dst, v []byte, fs FieldSet) ([]byte, error) {
	return rewrite(dst, v, func(dst []byte, num protowire.Number, entry []byte) ([]byte, action, error) {
		if num != structFields {
			return dst, keep, nil
		}
		key, err := mapEntryKey(entry)
		if err != nil {
			return dst, keep, err
		}
		sub, ok := fs[key]
		switch {
		case !ok:
			return dst, drop, nil
		case sub == nil:
			return dst, keep, nil
		}
		return replaced(rewrite(dst, entry, mapValue(func(dst, v []byte) ([]byte, error) { return pruneValue(dst, v, sub) })))
	})
}

// pruneValue prunes a Value that is an object, or a list, to fs: the items
// of a list that are objects, as DecodeFields does.
func pruneValue(dst, v []byte, fs FieldSet) ([]byte, error) {
	return rewrite(dst, v, func(dst []byte, num protowire.Number, v []byte) ([]byte, action, error) {
		switch num {
		case valueStruct:
			return replaced(pruneStruct(dst, v, fs))
		case valueList:
			return replaced(rewrite(dst, v, func(dst []byte, num protowire.Number, v []byte) ([]byte, action, error) {
				if num != listValues {
					return dst, keep, nil
				}
				return replaced(pruneValue(dst, v, fs))
			}))
		}
		return dst, keep, nil
	})
}

// mapValue rewrites the value of a map entry with prune.
func mapValue(prune func(dst, v []byte) ([]byte, error)) rewriter {
	return func(dst []byte, num protowire.Number, v []byte) ([]byte, action, error) {
		if num != mapValueField {
			return dst, keep, nil
		}
		return replaced(prune(dst, v))
	}
}

// mapEntryKey is the string key of a map entry (the last, as
// proto.Unmarshal reads a repeated one).
func mapEntryKey(entry []byte) (string, error) {
	var key string
	for len(entry) > 0 {
		num, typ, n := protowire.ConsumeTag(entry)
		if n < 0 {
			return "", errMalformed
		}
		entry = entry[n:]
		m := protowire.ConsumeFieldValue(num, typ, entry)
		if m < 0 {
			return "", errMalformed
		}
		if num == mapKeyField && typ == protowire.BytesType {
			k, _ := protowire.ConsumeBytes(entry)
			key = string(k)
		}
		entry = entry[m:]
	}
	return key, nil
}

// What a rewriter does with a length-delimited field.
type action int

const (
	keep    action = iota // as it is
	drop                  // leave it out
	replace               // with the value the rewriter appended
)

// A rewriter rewrites the length-delimited field num, whose value is v: to
// replace it, it appends the new value to dst and returns it.
type rewriter func(dst []byte, num protowire.Number, v []byte) ([]byte, action, error)

// replaced is the action of a rewriter that appended a field's new value.
func replaced(dst []byte, err error) ([]byte, action, error) { return dst, replace, err }

// rewrite appends the message b to dst with each length-delimited field
// through f, every other field as it is, in the same order. A new value is
// never longer than the old one: its length is written in the old one's
// place, and the value moved back when its length takes fewer bytes.
func rewrite(dst, b []byte, f rewriter) ([]byte, error) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, errMalformed
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil, errMalformed
		}
		field := b[:n+m]
		b = b[n+m:]
		if typ != protowire.BytesType {
			dst = append(dst, field...)
			continue
		}
		v, _ := protowire.ConsumeBytes(field[n:])
		start := len(dst)
		dst = append(dst, field[:n]...) // the tag
		lenAt := len(dst)
		dst = protowire.AppendVarint(dst, uint64(len(v)))
		valueAt := len(dst)
		var act action
		var err error
		if dst, act, err = f(dst, num, v); err != nil {
			return nil, err
		}
		switch act {
		case keep:
			dst = append(dst[:valueAt], v...)
		case drop:
			dst = dst[:start]
		case replace:
			size := len(dst) - valueAt
			w := protowire.SizeVarint(uint64(size))
			if w > valueAt-lenAt {
				return nil, errMalformed // longer than it was: not a pruning
			}
			if w < valueAt-lenAt {
				copy(dst[lenAt+w:], dst[valueAt:])
				dst = dst[:lenAt+w+size]
			}
			protowire.AppendVarint(dst[:lenAt], uint64(size))
		}
	}
	return dst, nil
}
