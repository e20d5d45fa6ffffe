//go:build tools

// Package tools pins the newer standalone Crossplane CLI
// (github.com/crossplane/cli/v2). Its `render` runs the pipeline through a
// Crossplane core binary (`--crossplane-binary`, see tools/crossplane-core).
// Build both with `make tools-v2`.
package tools

import (
	_ "github.com/crossplane/cli/v2/cmd/crossplane"
)
