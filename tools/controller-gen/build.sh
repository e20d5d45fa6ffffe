#!/usr/bin/env bash
# Builds the pinned controller-gen (see go.mod in this directory) into
# .tools/bin/controller-gen at the repository root. The version is pinned in
# go.mod/go.sum here, so a fresh clone with an empty module cache builds the
# exact same tool. Used by `go generate -tags generate ./input/... ./xrd/...`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

# This is its own module; keep a go.work elsewhere in the tree from pulling it
# in, and refuse to silently update go.mod/go.sum.
export GOWORK=off
export GOFLAGS="${GOFLAGS:-} -mod=readonly"

mkdir -p ../../.tools/bin
go build -trimpath -o ../../.tools/bin/controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen
echo "built $(cd ../../.tools/bin && pwd)/controller-gen ($(../../.tools/bin/controller-gen --version))" >&2
