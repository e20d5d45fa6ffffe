//go:build tools

// Package tools pins the Kubernetes control plane used by the e2e tests
// (e2e/): kube-apiserver, kube-controller-manager and kube-scheduler from
// k8s.io/kubernetes, whose staging modules (k8s.io/api, k8s.io/client-go, ...)
// are mapped to the matching tagged versions by the replace lines in go.mod.
// `go install` refuses a module with replace directives; this wrapper module's
// `go build` works.
// Build them with tools/kube/build.sh.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
