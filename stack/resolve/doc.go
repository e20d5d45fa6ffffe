// Package resolve turns a decoded ProductionStack into the one
// configuration each engine runs: it decodes the spec and the function's
// Input, applies their defaults, merges the spec's layers (top level,
// models[], disaggregation groups) into one EngineConfig per engine with the
// layer each value came from, and says which vLLM, router, LMCache and
// picker release each engine runs (from package upstream). The facts the
// builders and the checks share (multi-node shape, LMCache, P/D roles,
// ports, autoscaling) are derived here, once: facts.go.
//
// It refuses nothing (validate says what is wrong) and builds no object;
// it imports only names of stack/ (stack/layers_test.go). A Stack is never
// changed after New.
package resolve
