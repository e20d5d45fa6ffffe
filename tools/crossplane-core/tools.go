//go:build tools

// Package tools pins the Crossplane core binary (cmd/crossplane). Only its
// `internal render` subcommand is used, by the Crossplane CLI from
// tools/crossplane-cli (`crossplane render --crossplane-binary`).
// Build it with `make tools-v2`.
package tools

import (
	_ "github.com/crossplane/crossplane/v2/cmd/crossplane"
)
