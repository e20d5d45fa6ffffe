// Package stack turns a ProductionStack into the Kubernetes objects that
// serve it: the vLLM engines with their Services, model caches and chat
// templates, the router with its RBAC, the LMCache server, and what exposes,
// scales and protects them. It is plain Go: the typed spec (and the
// function's Input for defaults) in, typed k8s.io/api objects and findings
// out, with no function SDK, gRPC or protobuf, so the function (package fn),
// helm2stack and the tests use it alike.
//
// The path of a stack:
//
//	spec, raw, err := DecodeSpec(written)   // strict: errors name the field
//	s := New(id, spec, input)               // defaults, the releases each engine runs
//	if err := s.Validate(raw).Err(); ...    // refusals name the field and the fix
//	objs, err := s.Compose(observed)        // every object, by its stable key; Keys(has) when only existence is known
//
// Parts says what package status observes of the composed stack. What the
// stack knows of vLLM, router and LMCache releases comes from package
// upstream.
package stack
