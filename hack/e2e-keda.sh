#!/usr/bin/env bash
# The scale-from-zero chain with the real programs (`make e2e-keda`):
# e2e TestScaleFromZeroKEDA on the e2e control plane (hack/e2e.sh), with
#   - the endpoint picker $EPP (GAIE cmd/epp v1.5.0, make epp),
#   - KEDA's operator $KEDA_OPERATOR (v2.20.2, make keda from tools/keda),
#   - Prometheus from Debian's package prometheus=${PROMETHEUS_DEB}, unpacked
#     (`apt-get download` + `dpkg-deb -x`: no install, no service started)
#     into .tools/prometheus/<version>/ once; PROMETHEUS=<binary> uses another.
# The test runs itself again in a private network namespace (root), where the
# kubelet stand-in's pod range is routed to the loopback.
#
# Environment: E2E_GO_TEST_FLAGS (added), E2E_TIMEOUT, EPP, KEDA_OPERATOR, PROMETHEUS.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

# bookworm's prometheus (Prometheus 2.42.0).
PROMETHEUS_DEB="2.42.0+ds-5+b6"

if [[ -z "${PROMETHEUS:-}" ]]; then
	dir="${ROOT}/.tools/prometheus/${PROMETHEUS_DEB}"
	if [[ ! -x "${dir}/usr/bin/prometheus" ]]; then
		tmp="$(mktemp -d)"
		trap 'rm -rf "${tmp}"' EXIT
		if ! (cd "${tmp}" && apt-get download "prometheus=${PROMETHEUS_DEB}" >&2); then
			echo "e2e-keda: cannot download Debian's prometheus=${PROMETHEUS_DEB} (run apt-get update first?)" >&2
			exit 1
		fi
		rm -rf "${dir}.tmp"
		mkdir -p "$(dirname "${dir}")"
		dpkg-deb -x "${tmp}"/prometheus_*.deb "${dir}.tmp"
		mv "${dir}.tmp" "${dir}"
		rm -rf "${tmp}"
		trap - EXIT
	fi
	PROMETHEUS="${dir}/usr/bin/prometheus"
fi
"${PROMETHEUS}" --version 2>&1 | head -n1 >&2
export PROMETHEUS
export KEDA_OPERATOR="${KEDA_OPERATOR:-${ROOT}/.tools/bin/keda-operator}"
export EPP="${EPP:-${ROOT}/.tools/bin/epp}"

export E2E_GO_TEST_FLAGS="-v -run ^TestScaleFromZeroKEDA\$ ${E2E_GO_TEST_FLAGS:-}"
exec bash "${ROOT}/hack/e2e.sh"
