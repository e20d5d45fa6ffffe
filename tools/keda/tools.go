//go:build tools

// Package tools pins KEDA's operator (github.com/kedacore/keda/v2 cmd/operator).
// make e2e-keda runs it against the e2e control plane: it reads the
// ScaledObject the function renders, asks Prometheus for the trigger's value
// and scales the engine Deployment from 0 to 1 and back (hack/NOTES.md).
package tools

import (
	_ "github.com/kedacore/keda/v2/cmd/operator"
)
