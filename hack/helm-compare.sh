#!/usr/bin/env bash
# Renders the vLLM production-stack chart for every helm2stack scenario
# values file (cmd/helm2stack/testdata/scenarios/*.values.yaml) with
# `helm template`, then runs TestHelmCompare, which compares the chart's
# engine and router containers (arguments, env, ports, probes) with the
# chart side of each scenario's expect file. `make helm-compare`; not part
# of `make test`: the chart is not on the Go module proxy or in CI.
#
#   CHART_SRC   a production-stack checkout (its helm/ directory is the
#               chart) or a bare git mirror of it; default: the mirror at
#               /work/.mirror/vllm-project+production-stack/repo
#   CHART_REF   the revision of a git CHART_SRC; default vllm-stack-0.1.12
#   HELM        the helm binary; default .tools/bin/helm (make helm)
#   UPDATE_EXPECT=1  rewrite the expect files from both renderings
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CHART_SRC="${CHART_SRC:-/work/.mirror/vllm-project+production-stack/repo}"
CHART_REF="${CHART_REF:-vllm-stack-0.1.12}"
HELM="${HELM:-$ROOT/.tools/bin/helm}"
OUT="$ROOT/_output/helm-compare"
SCENARIOS="$ROOT/cmd/helm2stack/testdata/scenarios"

[[ -x "$HELM" ]] || { echo "helm-compare: no helm at $HELM (make helm builds it)" >&2; exit 1; }

rm -rf "$OUT"
mkdir -p "$OUT/chart" "$OUT/rendered"
if [[ -d "$CHART_SRC/helm/templates" ]]; then
	cp -R "$CHART_SRC/helm/." "$OUT/chart/"
elif git --git-dir="$CHART_SRC" rev-parse --verify -q "$CHART_REF^{commit}" >/dev/null; then
	git --git-dir="$CHART_SRC" archive "$CHART_REF" helm | tar -x -C "$OUT/chart" --strip-components=1
else
	echo "helm-compare: CHART_SRC=$CHART_SRC is neither a checkout with helm/ nor a git repository with $CHART_REF" >&2
	exit 1
fi
grep -q '^version: 0.1.12$' "$OUT/chart/Chart.yaml" ||
	echo "helm-compare: warning: the chart is not vllm-stack 0.1.12; the expect files describe 0.1.12" >&2

# The chart depends on kube-prometheus-stack and prometheus-adapter, which
# helm refuses to render without (they are fetched from OCI registries, not
# reachable here). Both are disabled by default and no scenario enables
# them, so their dependency entries are dropped from Chart.yaml.
awk '/^dependencies:/ {skip=1; next} skip && /^[^ #-]/ {skip=0} !skip' "$OUT/chart/Chart.yaml" >"$OUT/chart/Chart.yaml.new"
mv "$OUT/chart/Chart.yaml.new" "$OUT/chart/Chart.yaml"
rm -f "$OUT/chart/Chart.lock"

for values in "$SCENARIOS"/*.values.yaml; do
	name="$(basename "$values" .values.yaml)"
	"$HELM" template s "$OUT/chart" --namespace llm -f "$values" >"$OUT/rendered/$name.yaml"
done
echo "helm-compare: rendered $(ls "$OUT/rendered" | wc -l) scenarios with $("$HELM" version --short) into $OUT/rendered"

cd "$ROOT"
args=()
[[ -n "${UPDATE_EXPECT:-}" ]] && args=(-args -update-expect)
HELM_RENDERED="$OUT/rendered" go test -count=1 -run 'TestHelmCompare' ./cmd/helm2stack/ "${args[@]}"
