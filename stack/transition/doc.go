// Package transition decides, over the objects build made and what
// Crossplane observed, what a stack composes while it changes: make before
// break. A model whose topology changes keeps its old workload until the
// new one is ready (moves.go, topology.go), the router or a pool keeps the
// logic it runs (moves.go), a routing layer keeps serving until its
// successor does (routing_move.go, route_move.go), an autoscaler takes a
// Deployment's replicas over without a drop (handover.go), and a key never
// changes kind (keys.go).
//
// Decide returns what to compose and what to report as a value (Result);
// nothing here writes into the resolved stack. It imports names, resolve
// and build of stack/ (stack/layers_test.go).
package transition
