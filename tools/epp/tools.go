//go:build tools

// Package tools pins the Gateway API Inference Extension's endpoint picker
// (kubernetes-sigs/gateway-api-inference-extension cmd/epp). v1.5.0 is the
// last release that carries cmd/epp (the picker moved to llm-d/llm-d-router,
// whose module the proxy does not serve). The e2e suite's TestEndpointPicker
// runs it against the real kube-apiserver.
package tools

import (
	_ "sigs.k8s.io/gateway-api-inference-extension/cmd/epp"
)
