// Package crossplane tests function-vllm-stack as users run it: a real
// Crossplane core v2.3.4 and its RBAC manager (processes, under their own
// ServiceAccounts with the Helm chart's RBAC and composition/clusterrole.yaml)
// install the package `make xpkg` builds from an OCI registry on 127.0.0.1,
// call the function binary it carries over mTLS at the endpoint of its
// FunctionRevision, and compose ProductionStacks on a control plane with a
// scheduler and a kubelet stand-in (one GPU node).
//
// The tests (files with the build tag e2e_crossplane; this file has none, so
// that `go test ./...` in e2e/ sees the package and runs nothing) run only
// through hack/e2e-crossplane.sh (`make e2e-crossplane`),
// which compiles them with -tags e2e_crossplane and runs the binary in
// private network and mount namespaces (Crossplane's servers bind every
// interface; there, that is only lo).
package crossplane
