//go:build tools

// Package tools pins controller-gen, which generates the Input CRD and
// deepcopy code (input/generate.go) and the ProductionStack XRDs (xrd/gen).
// Build it with tools/controller-gen/build.sh.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
)
