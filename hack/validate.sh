#!/usr/bin/env bash
# Render an XR through the locally built function (hack/render.sh, with
# --include-full-xr) and validate the output with `crossplane beta validate`
# against the XRD, fully offline.
#
# Usage:
#   hack/validate.sh [XR] [COMPOSITION] [FUNCTIONS] [-- EXTRA_RENDER_ARGS...]
#   hack/validate.sh --rendered FILE      # validate an already rendered file ('-' = stdin)
#
# Offline: `crossplane beta validate` always wants the core Crossplane CRDs of
# the image xpkg.crossplane.io/crossplane/crossplane:<version>, looked up in
# <cache-dir>/xpkg.crossplane.io/crossplane/crossplane@<version>/package.yaml
# and pulled from the registry when that directory is missing. This script
# fills that directory from cluster/crds/ of the pinned crossplane Go module
# (same files the image ships in /crds), so nothing is downloaded. See
# hack/NOTES.md.
#
# Environment:
#   CROSSPLANE           crossplane CLI (default .tools/bin/crossplane)
#   CROSSPLANE_VERSION   default: the version pinned in tools/crossplane/go.mod
#   VALIDATE_CACHE_DIR   default .tools/validate-cache
#   VALIDATE_EXTENSIONS  comma-separated files/dirs (default xrd/definition.yaml,package/input)
#                        Never list pkg.crossplane.io Function/Provider/Configuration
#                        objects here: validate would try to pull their packages.
#   VALIDATE_XRD         XRD passed to render as --xrd (applies schema defaults
#                        to the XR like the API server would; "" to skip)
#                        (default xrd/definition.yaml)
#   VALIDATE_ARGS        extra `crossplane beta validate` args, word-split
#                        (e.g. --skip-success-results, --error-on-missing-schemas)
#   RENDER_ARGS, FUNCTION_BIN, FUNCTION_ARGS: see hack/render.sh
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

CROSSPLANE="${CROSSPLANE:-${ROOT}/.tools/bin/crossplane}"
if [[ -z "${CROSSPLANE_VERSION:-}" ]]; then
	CROSSPLANE_VERSION="$(grep -oE 'github.com/crossplane/crossplane/v2 v[^ ]+' "${ROOT}/tools/crossplane/go.mod" | head -n1 | cut -d' ' -f2)"
fi
CACHE_DIR="${VALIDATE_CACHE_DIR:-${ROOT}/.tools/validate-cache}"
EXTENSIONS="${VALIDATE_EXTENSIONS:-${ROOT}/xrd/definition.yaml,${ROOT}/package/input}"
VALIDATE_XRD="${VALIDATE_XRD-${ROOT}/xrd/definition.yaml}"
read -r -a validate_args <<<"${VALIDATE_ARGS:-}"

if [[ ! -x "$CROSSPLANE" ]]; then
	echo "validate.sh: $CROSSPLANE not found (run: make tools)" >&2
	exit 1
fi

# --cache-dir must be absolute (the CLI joins it as is).
case "$CACHE_DIR" in
/*) ;;
*) CACHE_DIR="$(pwd)/${CACHE_DIR}" ;;
esac

core_image="xpkg.crossplane.io/crossplane/crossplane:${CROSSPLANE_VERSION}"
core_dir="${CACHE_DIR}/xpkg.crossplane.io/crossplane/crossplane@${CROSSPLANE_VERSION}"

# Seed the validate cache with the core CRDs from the pinned Go module.
if [[ ! -s "${core_dir}/package.yaml" ]]; then
	mod_json="$(cd "${ROOT}/tools/crossplane" && GOWORK=off GOFLAGS=-mod=readonly go mod download -json "github.com/crossplane/crossplane/v2@${CROSSPLANE_VERSION}")"
	mod_dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$mod_json")"
	if [[ -z "$mod_dir" || ! -d "${mod_dir}/cluster/crds" ]]; then
		echo "validate.sh: cannot find cluster/crds of github.com/crossplane/crossplane/v2@${CROSSPLANE_VERSION}" >&2
		exit 1
	fi
	mkdir -p "$core_dir"
	tmp_pkg="$(mktemp "${core_dir}/package.yaml.XXXXXX")"
	for f in "${mod_dir}"/cluster/crds/*.yaml; do
		cat "$f" >>"$tmp_pkg"
		printf '\n---\n' >>"$tmp_pkg"
	done
	mv -f "$tmp_pkg" "${core_dir}/package.yaml"
	chmod 0644 "${core_dir}/package.yaml"
fi

tmp="$(mktemp -d "${TMPDIR:-/tmp}/validate.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT

rendered="${tmp}/rendered.yaml"
if [[ "${1:-}" == "--rendered" ]]; then
	if [[ $# -ne 2 ]]; then
		echo "usage: $0 --rendered FILE|-" >&2
		exit 2
	fi
	if [[ "$2" == "-" ]]; then
		cat >"$rendered"
	else
		cp "$2" "$rendered"
	fi
else
	xrd_arg=""
	[[ -n "$VALIDATE_XRD" ]] && xrd_arg="--xrd=${VALIDATE_XRD}"
	RENDER_ARGS="--include-full-xr ${xrd_arg} ${RENDER_ARGS:-}" "${ROOT}/hack/render.sh" "$@" >"$rendered"
fi

out="${tmp}/validate.out"
set +e
"$CROSSPLANE" beta validate "$EXTENSIONS" "$rendered" \
	--cache-dir="$CACHE_DIR" --crossplane-image="$core_image" "${validate_args[@]}" >"$out" 2>&1
rc=$?
set -e
cat "$out"
if grep -q "downloading" "$out"; then
	echo "validate.sh: crossplane beta validate tried to download schemas (see above); it must run offline" >&2
	exit 1
fi
exit "$rc"
