#!/usr/bin/env bash
# Builds the pinned Kubernetes control plane for the e2e tests (e2e/):
#
#   kube-apiserver, kube-controller-manager,  k8s.io/kubernetes v1.37.2
#   kube-scheduler
#   etcd                                       go.etcd.io/etcd/server/v3 v3.7.0
#
# into .tools/kube/<KUBE_VERSION>/ at the repository root. The versions are
# pinned in go.mod/go.sum here (a wrapper module: `go install` refuses
# k8s.io/kubernetes, whose go.mod has replace directives; the replace lines here
# map its staging modules to their v0.37.2 tags). A fresh clone with an empty
# module cache builds the same binaries. A cold build (empty module and build
# caches) needs about 29 CPU-minutes: 15-20 minutes on an idle 2-core machine,
# 35 when the machine is busy. kube-scheduler adds under a minute of that: all
# but 6 of its 1453 packages are kube-apiserver's or kube-controller-manager's,
# so it costs little more than its link.
#
# The build is reused while .tools/kube/<KUBE_VERSION>/stamp matches the hash
# of this directory's inputs (go.mod, go.sum, *.go, this script); FORCE=1
# rebuilds. Prints the output directory on its last line.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "${HERE}/../.." && pwd)"
cd "${HERE}"

# This is its own module: keep any go.work from pulling it in, and refuse to
# silently change go.mod/go.sum.
export GOWORK=off
export GOFLAGS="$(go env GOFLAGS) -mod=readonly"
export CGO_ENABLED=0

KUBE_VERSION="$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' go.mod)"
ETCD_VERSION="$(awk '$1 == "go.etcd.io/etcd/server/v3" { print $2; exit }' go.mod)"
[[ "${KUBE_VERSION}" =~ ^v([0-9]+)\.([0-9]+)\.[0-9]+$ ]] || { echo "cannot read k8s.io/kubernetes's version from go.mod" >&2; exit 1; }
KUBE_MAJOR="${BASH_REMATCH[1]}"
KUBE_MINOR="${BASH_REMATCH[2]}"

OUT="${ROOT}/.tools/kube/${KUBE_VERSION}"
stamp="$(cat go.mod go.sum build.sh $(find . -name '*.go' | LC_ALL=C sort) | sha256sum | cut -d' ' -f1)"

if [[ "${FORCE:-0}" != 1 && -f "${OUT}/stamp" && "$(cat "${OUT}/stamp")" == "${stamp}" ]] &&
	[[ -x "${OUT}/kube-apiserver" && -x "${OUT}/kube-controller-manager" && -x "${OUT}/kube-scheduler" && -x "${OUT}/etcd" ]]; then
	echo "reusing the control plane in ${OUT} (FORCE=1 rebuilds)" >&2
	echo "${OUT}"
	exit 0
fi

mkdir -p "${OUT}"
rm -f "${OUT}/stamp"

# The version the binaries report (/version, --version), set the way
# kubernetes' hack/lib/version.sh does, so clients can parse it. The commit is
# not known from the module proxy; buildDate is the release's tag time.
build_date="$(go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' k8s.io/kubernetes 2>/dev/null || echo 1970-01-01T00:00:00Z)"
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X ${pkg}.gitVersion=${KUBE_VERSION}"
	ldflags+=" -X ${pkg}.gitMajor=${KUBE_MAJOR}"
	ldflags+=" -X ${pkg}.gitMinor=${KUBE_MINOR}"
	ldflags+=" -X ${pkg}.gitTreeState=clean"
	ldflags+=" -X ${pkg}.buildDate=${build_date}"
done

echo "building kube-apiserver, kube-controller-manager, kube-scheduler ${KUBE_VERSION} and etcd ${ETCD_VERSION} into ${OUT} (cold: 15-35 min on 2 cores)" >&2
start=${SECONDS}
go build -trimpath -buildvcs=false -ldflags "${ldflags}" -o "${OUT}/" \
	k8s.io/kubernetes/cmd/kube-apiserver \
	k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-scheduler
go build -trimpath -buildvcs=false -ldflags "-s -w" -o "${OUT}/etcd" ./etcd
echo "built in $((SECONDS - start))s" >&2

# Check that each binary runs and reports the pinned version. (Outputs are
# captured whole: a reader that stops early would SIGPIPE the binary.)
apiserver_version="$("${OUT}/kube-apiserver" --version)"
kcm_version="$("${OUT}/kube-controller-manager" --version)"
scheduler_version="$("${OUT}/kube-scheduler" --version)"
etcd_version="$("${OUT}/etcd" --version)"
[[ "${apiserver_version}" == "Kubernetes ${KUBE_VERSION}" ]] ||
	{ echo "kube-apiserver --version: ${apiserver_version}" >&2; exit 1; }
[[ "${kcm_version}" == "Kubernetes ${KUBE_VERSION}" ]] ||
	{ echo "kube-controller-manager --version: ${kcm_version}" >&2; exit 1; }
[[ "${scheduler_version}" == "Kubernetes ${KUBE_VERSION}" ]] ||
	{ echo "kube-scheduler --version: ${scheduler_version}" >&2; exit 1; }
[[ "${etcd_version}" == *"etcd Version: ${ETCD_VERSION#v}"* ]] ||
	{ echo "etcd --version: ${etcd_version}" >&2; exit 1; }
echo "${apiserver_version}; etcd ${ETCD_VERSION#v}" >&2

echo "${stamp}" >"${OUT}/stamp"
echo "${OUT}"
