//go:build tools

// Package crds pins the upstream projects whose CRDs the API-server e2e suite
// (../) installs, so that the objects the function composes are validated
// against the upstream schemas: Gateway API (HTTPRoute), KEDA (ScaledObject),
// the Prometheus Operator (ServiceMonitor, PrometheusRule), LeaderWorkerSet and the Gateway API
// Inference Extension (InferencePool, at the release whose endpoint picker
// tools/epp builds). It is its own module so that
// their requirements never raise the versions the e2e module builds with.
//
// The blank imports keep `go mod tidy` from dropping the requirements; none of
// this is compiled into the tests. The tests locate the CRD files with
// `go mod download -json` in this directory (the module zips hold the
// repositories' YAML files) and generate the ServiceMonitor CRD with the
// pinned controller-gen from the pinned Prometheus Operator API types: the
// Go module proxy does not serve the module that holds upstream's YAML.
package crds

import (
	_ "github.com/kedacore/keda/v2/version"
	_ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
	_ "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	_ "sigs.k8s.io/gateway-api/pkg/consts"
	_ "sigs.k8s.io/lws/api/leaderworkerset/v1"
)
