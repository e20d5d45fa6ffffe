//go:build tools

// Package tools pins the Helm CLI used by `make helm-compare` (hack/helm-compare.sh),
// which renders the production-stack chart's templates for the converter's
// scenario values files. Build it with `make helm`.
package tools

import (
	_ "helm.sh/helm/v4/cmd/helm"
)
