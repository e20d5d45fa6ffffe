#!/usr/bin/env bash
# End-to-end tests through real Crossplane (`make e2e-crossplane`).
#
#   1. builds (or reuses) the control plane with tools/kube/build.sh, like
#      hack/e2e.sh, including kube-scheduler; `make e2e-crossplane` has built
#      .tools/bin/crossplane-core (Crossplane core, tools/crossplane-core),
#      _output/function-vllm-stack.xpkg (`make xpkg`) and the Configuration
#      built to depend on it in the tests' registry (`make e2e-xpkg`) before;
#   2. compiles the tests of e2e/crossplane (build tag e2e_crossplane) into a
#      test binary, and generates the Prometheus Operator's CRDs with the
#      pinned controller-gen (e2e/crds; the ServiceMonitor CRD is installed
#      midway by one scenario), here, where the Go module proxy is reachable;
#   3. runs that binary as root under `unshare --net --mount --fork`: in a
#      private network namespace whose only interface is lo (brought up with
#      `ip link set lo up`; Crossplane's metrics and health servers and the
#      RBAC manager's metrics server bind every interface, which must not
#      happen on this machine's network) and a private mount namespace (the
#      tests bind-mount their own /etc/hosts and /etc/resolv.conf there). The
#      tests start etcd, kube-apiserver, kube-controller-manager,
#      kube-scheduler, a kubelet stand-in, a Gateway stand-in and a KEDA
#      stand-in (in process; the HTTPRoute, InferencePool and ScaledObject
#      CRDs come from the modules e2e/crds pins), an OCI registry, Crossplane core,
#      its RBAC manager and the function, all on 127.0.0.1, and stop them;
#   4. fails if any of those processes is left running (and ends it): any
#      process still in the tests' network namespace, so only this run's.
#
# Environment:
#   E2E_TEST_FLAGS        extra test binary flags, word-split (e.g. "-test.run TestStacks/Scenarios/Refused")
#   E2E_TIMEOUT           test timeout (default 20m; 60m with E2E_BENCH)
#   E2E_PARALLEL          parallel subtests at once (default 16: they mostly wait; go test's default is GOMAXPROCS)
#   E2E_BENCH             instead of the tests, the scale benchmark (`make bench-crossplane`):
#                         the numbers of stacks to apply at once, e.g. 1,10,50 (runs only TestBench)
#   E2E_BENCH_OUT         a file that receives the benchmark's markdown report
#   E2E_BENCH_TTL         the function's --ttl in the benchmark (default 5s, the suite's)
#   E2E_BENCH_SETTLE      how long after all are Ready the steady-state window starts (default 2 TTLs)
#   E2E_BENCH_STEADY      the benchmark's steady-state window (default 12 TTLs)
#   E2E_BENCH_DEBUG       run Crossplane and the function with --debug in the benchmark too
#   KUBE_BIN_DIR          use this control plane instead of building tools/kube
#   E2E_LOG_DIR           a directory that receives the logs of Crossplane, its RBAC manager and the function
#   CROSSPLANE_CORE       the crossplane binary (default .tools/bin/crossplane-core, the newest
#                         release tested; make e2e-crossplane-oldest: the oldest)
#   CROSSPLANE_CORE_MODULE  the tools module it was built from, whose crossplane
#                         module's cluster/crds are installed (default tools/crossplane-core)
#   LWS_MANAGER           LeaderWorkerSet's manager (default .tools/bin/lws-manager, tools/lws)
#   XPKG                  the Function package (default _output/function-vllm-stack.xpkg)
#   CONFIG_XPKG           the Configuration package, built with XPKG_REGISTRY
#                         (default _output/e2e/function-vllm-stack-configuration.xpkg)
#   XPKG_REGISTRY         the registry and path its dependsOn names; the tests serve
#                         it on 127.0.0.1 (default 127.0.0.1:5000/vllm-project)
#   VERSION               the tag both packages are pushed with (default: the VERSION file)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

export GOWORK=off
start=${SECONDS}

if [[ "$(id -u)" != 0 ]]; then
	echo "e2e-crossplane: must run as root (unshare --net --mount)" >&2
	exit 1
fi
for tool in unshare ip; do
	command -v "${tool}" >/dev/null || { echo "e2e-crossplane: ${tool} not found (util-linux, iproute2)" >&2; exit 1; }
done

CROSSPLANE_CORE="${CROSSPLANE_CORE:-${ROOT}/.tools/bin/crossplane-core}"
CROSSPLANE_CORE_MODULE="${CROSSPLANE_CORE_MODULE:-${ROOT}/tools/crossplane-core}"
XPKG="${XPKG:-${ROOT}/_output/function-vllm-stack.xpkg}"
CONFIG_XPKG="${CONFIG_XPKG:-${ROOT}/_output/e2e/function-vllm-stack-configuration.xpkg}"
XPKG_REGISTRY="${XPKG_REGISTRY:-127.0.0.1:5000/vllm-project}"
VERSION="${VERSION:-$(cat VERSION)}"
LWS_MANAGER="${LWS_MANAGER:-${ROOT}/.tools/bin/lws-manager}"
for f in "${CROSSPLANE_CORE}" "${XPKG}" "${CONFIG_XPKG}" "${LWS_MANAGER}"; do
	[[ -f "${f}" ]] || { echo "e2e-crossplane: ${f} is missing: run make e2e-crossplane" >&2; exit 1; }
done

# 1. The control plane (with kube-scheduler), unless KUBE_BIN_DIR names one.
KUBE_BIN_DIR="${KUBE_BIN_DIR:-$(bash tools/kube/build.sh | tail -n1)}"
# Crossplane's core CRDs (the image has them at /crds), from the module
# version that CROSSPLANE_CORE_MODULE (the tools module CROSSPLANE_CORE was
# built from) pins.
CROSSPLANE_CRDS="$(cd "${CROSSPLANE_CORE_MODULE}" &&
	go mod download github.com/crossplane/crossplane/v2 &&
	go list -mod=readonly -m -f '{{.Dir}}' github.com/crossplane/crossplane/v2)/cluster/crds"
[[ -f "${CROSSPLANE_CRDS}/apiextensions.crossplane.io_compositions.yaml" ]] ||
	{ echo "e2e-crossplane: no Crossplane CRDs in ${CROSSPLANE_CRDS}" >&2; exit 1; }
# LeaderWorkerSet's CRD, from the module version tools/lws pins (its
# manager runs in the tests, with its webhooks).
LWS_CRD="$(cd tools/lws &&
	go mod download sigs.k8s.io/lws &&
	go list -mod=readonly -m -f '{{.Dir}}' sigs.k8s.io/lws)/config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml"
[[ -f "${LWS_CRD}" ]] || { echo "e2e-crossplane: no LeaderWorkerSet CRD at ${LWS_CRD}" >&2; exit 1; }
# The HTTPRoute and InferencePool CRDs, for stacks on the inference
# extension: the files e2e/upstream_test.go installs, from the module
# versions e2e/crds pins (Gateway API v1.6.3's standard channel, the
# Gateway API Inference Extension v1.5.0).
moddir() {
	(cd e2e/crds && go mod download "$1" && go list -mod=readonly -m -f '{{.Dir}}' "$1")
}
HTTPROUTE_CRD="$(moddir sigs.k8s.io/gateway-api)/config/crd/standard/gateway.networking.k8s.io_httproutes.yaml"
INFERENCEPOOL_CRD="$(moddir sigs.k8s.io/gateway-api-inference-extension)/config/crd/bases/inference.networking.k8s.io_inferencepools.yaml"
# The InferenceObjective CRDs, for models with inferenceObjectives: GAIE
# v1.5.0's (its picker, llm-d's before v0.9.0) and llm-d-router v0.10.0's
# (llm-d's picker from v0.9.0, the default), derived in e2e/crds/llm-d from
# GAIE's by e2e/llmdcrd_test.go.
OBJECTIVE_CRD="$(moddir sigs.k8s.io/gateway-api-inference-extension)/config/crd/bases/inference.networking.x-k8s.io_inferenceobjectives.yaml"
LLMD_OBJECTIVE_CRD="${ROOT}/e2e/crds/llm-d/llm-d.ai_inferenceobjectives.yaml"
# KEDA's ScaledObject CRD (v2.20.2, as e2e/upstream_test.go installs it),
# for stacks with scaleToZero (the KEDA stand-in scales their Deployments).
SCALEDOBJECT_CRD="$(moddir github.com/kedacore/keda/v2)/config/crd/bases/keda.sh_scaledobjects.yaml"
for f in "${HTTPROUTE_CRD}" "${INFERENCEPOOL_CRD}" "${OBJECTIVE_CRD}" "${LLMD_OBJECTIVE_CRD}" "${SCALEDOBJECT_CRD}"; do
	[[ -f "${f}" ]] || { echo "e2e-crossplane: no CRD at ${f}" >&2; exit 1; }
done
export KUBE_BIN_DIR CROSSPLANE_CORE CROSSPLANE_CRDS XPKG CONFIG_XPKG XPKG_REGISTRY VERSION LWS_MANAGER LWS_CRD HTTPROUTE_CRD INFERENCEPOOL_CRD OBJECTIVE_CRD LLMD_OBJECTIVE_CRD SCALEDOBJECT_CRD
built=${SECONDS}

E2E_TMP="$(mktemp -d "${TMPDIR:-/tmp}/vllm-stack-e2e-crossplane.XXXXXX")"

leftovers() {
	# Processes in the private network namespace of the tests (whose id the
	# namespace's first process wrote to ${E2E_TMP}/netns): only what this run
	# started, whatever else runs on the machine.
	local netns pid ns
	netns="$(cat "${E2E_TMP}/netns" 2>/dev/null || true)"
	[[ -n "${netns}" ]] || return 0
	for ns in /proc/[0-9]*/ns/net; do
		pid="${ns#/proc/}"
		pid="${pid%/ns/net}"
		[[ "$(readlink "${ns}" 2>/dev/null || true)" == "${netns}" ]] && echo "${pid}"
	done
	return 0
}

cleanup() {
	local rc=$? pids
	pids="$(leftovers)"
	if [[ -n "${pids}" ]]; then
		echo "e2e-crossplane: FAIL: processes left running: $(echo ${pids}); killing them" >&2
		# shellcheck disable=SC2086 # one pid per word
		kill -KILL ${pids} 2>/dev/null || true
		rc=1
	fi
	rm -rf "${E2E_TMP}"
	echo "e2e-crossplane: build ${compiled:-${SECONDS}}s, tests $((SECONDS - ${compiled:-${SECONDS}}))s, total ${SECONDS}s (control plane $((built - start))s of the build)" >&2
	exit "${rc}"
}
trap cleanup EXIT

# 2. The test binary, compiled outside the private network namespace.
(
	cd e2e
	export GOFLAGS="$(go env GOFLAGS) -mod=readonly"
	go vet -tags e2e_crossplane ./xp/ ./crossplane/
	go test -c -tags e2e_crossplane -o "${E2E_TMP}/crossplane.test" ./crossplane/
)
# The Prometheus Operator's CRDs (its monitoring/v1 API types, pinned in
# e2e/crds/go.mod, through the pinned controller-gen, as upstream generates
# them and e2e/upstream_test.go does): TestStacks/Scenarios/MissingCRD
# installs the ServiceMonitor CRD midway.
E2E_MONITORING_CRDS="${E2E_TMP}/monitoring-crds.yaml"
(
	cd e2e/crds
	GOFLAGS="-mod=readonly" go run sigs.k8s.io/controller-tools/cmd/controller-gen crd:crdVersions=v1 \
		paths=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1 output:crd:stdout \
		>"${E2E_MONITORING_CRDS}"
)
grep -q 'name: servicemonitors.monitoring.coreos.com' "${E2E_MONITORING_CRDS}" ||
	{ echo "e2e-crossplane: controller-gen gave no ServiceMonitor CRD" >&2; exit 1; }
export E2E_MONITORING_CRDS
compiled=${SECONDS}

# The benchmark (E2E_BENCH) runs alone, for longer.
bench_flags=()
if [[ -n "${E2E_BENCH:-}" ]]; then
	bench_flags=(-test.run '^TestBench$')
	E2E_TIMEOUT="${E2E_TIMEOUT:-60m}"
	if [[ -n "${E2E_BENCH_OUT:-}" ]]; then
		mkdir -p "$(dirname "${E2E_BENCH_OUT}")"
		E2E_BENCH_OUT="$(cd "$(dirname "${E2E_BENCH_OUT}")" && pwd)/$(basename "${E2E_BENCH_OUT}")"
	fi
	export E2E_BENCH E2E_BENCH_OUT E2E_BENCH_TTL E2E_BENCH_SETTLE E2E_BENCH_STEADY E2E_BENCH_DEBUG CROSSPLANE_CORE_VERSION
fi

# 3. The tests, in private network and mount namespaces. The test binary
# refuses to start Crossplane unless its namespaces differ from these.
E2E_OUTER_NETNS="$(readlink /proc/self/ns/net)"
E2E_OUTER_MNTNS="$(readlink /proc/self/ns/mnt)"
export E2E_OUTER_NETNS E2E_OUTER_MNTNS
cd e2e/crossplane
# shellcheck disable=SC2086 # E2E_TEST_FLAGS is word-split on purpose
TMPDIR="${E2E_TMP}" unshare --net --mount --propagation private --kill-child -- \
	bash -c 'readlink /proc/self/ns/net >"${TMPDIR}/netns" && ip link set lo up && exec "$@"' bash \
	"${E2E_TMP}/crossplane.test" -test.v -test.count=1 -test.timeout "${E2E_TIMEOUT:-20m}" \
	-test.parallel "${E2E_PARALLEL:-16}" "${bench_flags[@]}" ${E2E_TEST_FLAGS:-}
