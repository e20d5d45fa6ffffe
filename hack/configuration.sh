#!/usr/bin/env bash
# Stage the Configuration package's root for `crossplane xpkg build`
# (make xpkg): package-configuration/crossplane.yaml with the Function's
# reference and version filled in, and copies of the namespaced XRD and its
# Composition. Copied at build time, not kept in package-configuration/, so
# the package holds the files Crossplane is tested with and cannot drift.
#
# The Composition's functionRef names the Function Crossplane installs for
# the dependency: Crossplane names it after the reference's repository
# (xpkg.ToDNSLabel of e.g. "vllm-project/function-vllm-stack":
# vllm-project-function-vllm-stack), so that line is rewritten, and so is
# the Input's adapterSync.image, to the Function package at VERSION; the rest
# of composition/composition.yaml is copied byte for byte.
#
# Usage: hack/configuration.sh OUT_DIR FUNCTION_PACKAGE VERSION
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if [[ $# -ne 3 ]]; then
	echo "usage: $0 OUT_DIR FUNCTION_PACKAGE VERSION" >&2
	exit 2
fi
out="$1" pkg="$2" version="$3"

case "$pkg" in
*@* | */*:*)
	echo "configuration.sh: FUNCTION_PACKAGE $pkg must have no tag or digest (the version is VERSION)" >&2
	exit 2
	;;
esac
# The repository: the reference without its registry host (a first component
# with a '.' or ':', or localhost). Crossplane's dependencies need a host.
host="${pkg%%/*}"
if [[ "$host" == "$pkg" || ! ("$host" == *.* || "$host" == *:* || "$host" == localhost) ]]; then
	echo "configuration.sh: FUNCTION_PACKAGE $pkg must start with a registry host (e.g. ghcr.io/org/function-vllm-stack)" >&2
	exit 2
fi
repo="${pkg#*/}"
# xpkg.ToDNSLabel (crossplane-runtime pkg/xpkg/name.go): keep [a-z0-9], turn
# . / : - into '-', cut at 63, trim '-'.
fn_name="$(printf '%s' "$repo" | tr './:' '---' | tr -cd 'a-z0-9-' | cut -c1-63 | sed -e 's/^-*//' -e 's/-*$//')"

rm -rf "$out"
mkdir -p "$out"
sed -e "s|@FUNCTION_PACKAGE@|${pkg}|" -e "s|@VERSION@|${version}|" \
	"${ROOT}/package-configuration/crossplane.yaml" >"${out}/crossplane.yaml"
cp "${ROOT}/xrd/definition.yaml" "${out}/definition.yaml"
# Exactly one functionRef, named function-vllm-stack (test/xpkg checks the result).
n="$(grep -c '^        name: function-vllm-stack$' "${ROOT}/composition/composition.yaml" || true)"
if [[ "$n" != 1 ]]; then
	echo "configuration.sh: composition/composition.yaml: want one functionRef 'name: function-vllm-stack', found $n" >&2
	exit 1
fi
# Exactly one adapterSync image, the Function package at its version: the
# container that loads runtime LoRA adapters runs the function's own image.
n="$(grep -c '^          image: .*/function-vllm-stack:.*$' "${ROOT}/composition/composition.yaml" || true)"
if [[ "$n" != 1 ]]; then
	echo "configuration.sh: composition/composition.yaml: want one adapterSync 'image: <registry>/function-vllm-stack:<version>', found $n" >&2
	exit 1
fi
sed -e "s|^        name: function-vllm-stack\$|        name: ${fn_name}|" \
	-e "s|^          image: .*/function-vllm-stack:.*\$|          image: ${pkg}:${version}|" \
	"${ROOT}/composition/composition.yaml" >"${out}/composition.yaml"
