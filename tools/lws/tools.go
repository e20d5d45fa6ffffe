//go:build tools

// Package tools pins the LeaderWorkerSet controller (kubernetes-sigs/lws),
// whose manager `make e2e-crossplane` runs with its webhooks, so that a
// multi-node stack becomes Ready through the real controller. The version
// is the one the function's module pins (sigs.k8s.io/lws in ../../go.mod).
package tools

import (
	_ "sigs.k8s.io/lws/cmd"
)
