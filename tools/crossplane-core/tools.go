//go:build tools

// Package tools pins the newest Crossplane core the packages are tested on:
// cmd/crossplane, which `make e2e-crossplane` runs (the oldest, v2.0.0, is
// tools/crossplane-core-oldest), and whose `internal render` the optional
// CLI of tools/crossplane-cli runs (`make render-v2`). v2.4.0 is the newest
// release the Go module proxy serves with all its modules: v2.4.2 needs
// crossplane-runtime v2.4.2, which it refuses.
package tools

import (
	_ "github.com/crossplane/crossplane/v2/cmd/crossplane"
)
