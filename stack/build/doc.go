// Package build makes every Kubernetes object of a resolved stack, one
// builder file per component (engine_*, router*, inference*, cacheserver,
// exposure, scaling, storage, observability), and composes them in a fixed
// order under stable keys (compose.go).
//
// Each family of program options is written in one file: every `vllm
// serve` flag in engine_args.go, every engine environment variable in
// engine_env.go, every router flag and variable in router_args.go. A
// builder reads the resolved stack and the observed state it is given; it
// decides nothing a resolver or a check owns, never calls a check, and
// never changes the stack. It imports names and resolve of stack/
// (stack/layers_test.go).
package build
