//go:build tools

// Package tools pins the Crossplane CLI (crank) used by `make render`,
// `make validate` and `make xpkg`. Build it with `make tools`.
package tools

import (
	_ "github.com/crossplane/crossplane/v2/cmd/crank"
)
