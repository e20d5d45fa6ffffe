#!/usr/bin/env bash
# End-to-end tests against a real control plane (`make e2e`).
#
#   1. builds kube-apiserver, kube-controller-manager (k8s.io/kubernetes
#      v1.37.2) and etcd (v3.7.0) with tools/kube/build.sh into
#      .tools/kube/<version>/, or reuses that build (cold: 15-35 min on 2 cores);
#   2. runs `go test` in e2e/ (its own Go module): the tests start the control
#      plane on free 127.0.0.1 ports and stop it when they end;
#   3. fails if any process of the control plane is left running (and ends it).
#
# Environment:
#   E2E_GO_TEST_FLAGS  extra `go test` flags, word-split (e.g. "-v -run TestXRRejects")
#   E2E_TIMEOUT        go test -timeout (default 30m)
#   FORCE=1            rebuild the control plane
#
# Everything comes from the Go module proxy at the versions pinned in
# tools/kube/go.sum and e2e/go.sum; no Docker, no cluster needed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

export GOWORK=off
start=${SECONDS}

# 1. The control plane.
KUBE_BIN_DIR="$(bash tools/kube/build.sh | tail -n1)"
export KUBE_BIN_DIR
built=${SECONDS}

# The tests' temporary directories (certificates, etcd's data, logs) go under
# one directory that is removed on exit, even if the test binary is killed
# (its processes die with it: they get SIGKILL through Pdeathsig).
E2E_TMP="$(mktemp -d "${TMPDIR:-/tmp}/vllm-stack-e2e.XXXXXX")"

leftovers() {
	# Processes running a binary of the control plane.
	local pid exe
	for exe in /proc/[0-9]*/exe; do
		pid="${exe#/proc/}"
		pid="${pid%/exe}"
		case "$(readlink "${exe}" 2>/dev/null || true)" in
		"${KUBE_BIN_DIR}"/*) echo "${pid}" ;;
		esac
	done
}

cleanup() {
	local rc=$? pids
	pids="$(leftovers)"
	if [[ -n "${pids}" ]]; then
		echo "e2e: FAIL: control plane processes left running: $(echo ${pids}); killing them" >&2
		# shellcheck disable=SC2086 # one pid per word
		kill -KILL ${pids} 2>/dev/null || true
		rc=1
	fi
	rm -rf "${E2E_TMP}"
	echo "e2e: build $((built - start))s, tests $((SECONDS - built))s, total $((SECONDS - start))s" >&2
	exit "${rc}"
}
trap cleanup EXIT

# 2. The tests.
cd e2e
export GOFLAGS="$(go env GOFLAGS) -mod=readonly"
go vet ./...
# shellcheck disable=SC2086 # E2E_GO_TEST_FLAGS is word-split on purpose
TMPDIR="${E2E_TMP}" go test -count=1 -timeout "${E2E_TIMEOUT:-30m}" ${E2E_GO_TEST_FLAGS:-} ./...
