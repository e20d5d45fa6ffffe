// Package fuzz fuzzes the function end to end, in process: RunFunction on
// specs mutated from every example and test stack (FuzzRunFunction), and on
// observed state and required resources a broken or hostile cluster could
// send (FuzzObserved). For every input the function must not panic, must
// answer within maxRunTime, must answer the same request with the same
// bytes, and must either refuse the stack with a Fatal result that names
// the offending field, or compose objects that each pass the strict typed
// decode and the Kubernetes checks of the render tests
// (test/internal/kubecheck), and every value of the spec must land in
// exactly the option or positional of vLLM's or the router's command line it
// was meant for (internal/argvcheck). No composed object may hold a credential the
// spec wrote as a literal, except in the env entry the user wrote it in,
// with a warning; no response holds data of a Secret the cluster sends.
//
// A plain `go test ./test/fuzz` runs the seed corpus (every stack, a value
// at every field of the XRD, edge values, and testdata/fuzz) and
// TestNoSecretValues; hack/fuzz.sh fuzzes each target for a bounded time.
package fuzz
