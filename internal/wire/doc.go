// Package wire is the function's codec between Kubernetes objects and the
// protobuf forms of the function protocol, apart from the protocol's SDK:
//
//   - Encode and EncodeViaJSON: a typed object to the protobuf Struct of a
//     desired composed resource, with only the fields the function has an
//     opinion about (encode.go, decode.go);
//   - FieldSet and DecodeFields: the few fields the function reads of an
//     observed or required object, decoded from its Struct (fields.go);
//   - PruneRequest: the wire form of a RunFunctionRequest without the fields
//     of observed and required objects the function never reads, so that they
//     are never decoded (prune.go).
//
// It is a leaf: it imports the standard library, protobuf and
// k8s.io/apimachinery only, none of the function SDK, gRPC, or any package of
// this module (stack/, status/, fn/). Package fn adapts it to the SDK.
package wire
