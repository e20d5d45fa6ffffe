// Package crossplane tests function-vllm-stack as users install and run it:
// a real Crossplane core and its RBAC manager (processes, under their own
// ServiceAccounts with the Helm chart's RBAC) get README's install,
// composition/clusterrole.yaml and a Configuration (`make e2e-xpkg`: the
// one `make xpkg` builds, depending on the tests' registry) from an OCI
// registry on 127.0.0.1:5000, install its XRD and Composition and the
// Function it depends on from the same registry, call the function binary
// that package carries over mTLS at the endpoint of its FunctionRevision, and
// compose ProductionStacks on a control plane with a
// scheduler, a kubelet stand-in (one node with 64 GPUs), a volume
// provisioner stand-in (xp.Provisioner), LeaderWorkerSet's manager with
// its webhooks (xp.StartLWS), for multi-node stacks, and the HTTPRoute and
// InferencePool CRDs with a Gateway stand-in (xp.Gateway) that accepts the
// pools of stacks on the inference extension, and KEDA's ScaledObject CRD
// with a KEDA stand-in (xp.KEDA) that scales the engines of stacks with
// scaleToZero.
//
// TestConfigurationPackage and TestFunctionPackage check the packages
// installed; TestStacks (the Configuration's namespaced XRD) and TestClaims
// (the legacy XRD's claims, installed by hand once the Configuration is
// gone) run the scenarios, each in a namespace of its own and waiting for states
// that hold for a few TTLs: every example stack Ready with the status its
// pods give; pod-level reasons (Unschedulable, ImagePullError, Starting) on
// the XR and the claim; a pool its Gateway does not accept; a model scaled
// to zero while idle, Ready, then woken; the runtime adapters example
// changing its adapters with the same engine pods, the sync program's own
// code loading them into fake engines and the router's own discovery
// (production-stack 0.1.12, read from CHART_SRC) listing them; a refused
// stack (objects untouched, conditions Refused, Warning events) and its
// recovery; a missing optional CRD; no RBAC refusal over a stack's life; an
// HPA-owned replica count; replicas handed over to an HPA and to
// scaleToZero without a drop, and the autoscaler's kind switched old first;
// multiNode turned on with the Deployment serving
// until the LeaderWorkerSet is ready; the function down for a minute; and,
// for every stack, its deletion removing everything it composed. TestBench (only with E2E_BENCH, `make
// bench-crossplane`) measures N stacks applied at once.
//
// The tests (files with the build tag e2e_crossplane; this file has none, so
// that `go test ./...` in e2e/ sees the package and runs nothing) run only
// through hack/e2e-crossplane.sh (`make e2e-crossplane`),
// which compiles them with -tags e2e_crossplane and runs the binary in
// private network and mount namespaces (Crossplane's servers bind every
// interface; there, that is only lo).
package crossplane
