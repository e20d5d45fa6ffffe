//go:build tools

// Package tools pins the oldest Crossplane core the packages claim
// (spec.crossplane.version ">=v2.0.0" in package/crossplane.yaml and
// package-configuration/crossplane.yaml): cmd/crossplane of v2.0.0, which
// `make e2e-crossplane-oldest` runs the e2e-crossplane suite on. The newest
// tested is tools/crossplane-core.
package tools

import (
	_ "github.com/crossplane/crossplane/v2/cmd/crossplane"
)
