// Package e2e tests function-vllm-stack against a real Kubernetes control
// plane (etcd, kube-apiserver and kube-controller-manager built by
// tools/kube/build.sh): rendered objects of every kind the function composes
// pass strict server-side validation, the CRD kinds (HTTPRoute, ScaledObject,
// ServiceMonitor, PrometheusRule) against the upstream CRDs pinned in crds/go.mod; they are
// reconciled by the Deployment, HPA and disruption controllers and read back
// as observed state; the ProductionStack CRD Crossplane generates from
// xrd/definition.yaml defaults and rejects manifests as users will see; and
// Crossplane's ServiceAccount, bound only to composition/clusterrole.yaml, can
// create every composed kind. Run it with `bash hack/e2e.sh`.
package e2e
