#!/usr/bin/env bash
# Fuzz every fuzz target of the function for a bounded time, one after the
# other (go test takes one -fuzz target per run), and print a Markdown table:
# target, time, executions, executions per second, corpus size, and whether
# it failed.
#
# Usage:
#   hack/fuzz.sh                                  every target for its time
#   FUZZTIME=2m FUZZTIME_E2E=5m hack/fuzz.sh      longer
#   FUZZ_TARGETS="FuzzObserved" hack/fuzz.sh
#
# Environment:
#   FUZZTIME       go test -fuzztime of each target of stack, status, fn,
#                  internal/wire and helm2stack (default 4s)
#   FUZZTIME_E2E   go test -fuzztime of each target of test/fuzz, which runs
#                  RunFunction several times per input and starts from a
#                  larger corpus (default 45s: FuzzRunFunction's ~570 seeds
#                  take 20-40 s to replay as the baseline before the first
#                  new input, and a run that ends in the baseline fuzzes
#                  nothing; the table says "baseline only" then). The
#                  defaults make about two minutes in all, as `make test`
#                  runs it; `make fuzz` runs longer.
#   FUZZ_TARGETS   space-separated target names (default: all of them)
#   FUZZ_CACHE     directory of the corpus the fuzzer grows, one directory per
#                  target, for runs that build on earlier ones (`make fuzz`
#                  keeps it in _output/fuzz/cache). Default: a temporary one,
#                  so a run starts from the seeds and testdata/fuzz alone and
#                  takes the same time every time (a grown corpus takes longer
#                  to replay than a bounded run has)
#   FUZZ_MINIMIZE  go test -fuzzminimizetime (default 1s: a new input is
#                  minimized for at most that long; a fresh corpus finds many)
#
# A failing input is written to testdata/fuzz/<Target>/ of the target's
# package, where `go test` runs it from then on: commit it with the fix.
# Raw output is kept in _output/fuzz/<Target>.log, the table in
# _output/fuzz/summary.md.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

GO="${GO:-go}"
FUZZTIME="${FUZZTIME:-4s}"
FUZZTIME_E2E="${FUZZTIME_E2E:-45s}"
FUZZ_MINIMIZE="${FUZZ_MINIMIZE:-1s}"
OUT="${ROOT}/_output/fuzz"
mkdir -p "${OUT}"

# package target
ALL=(
	"./stack FuzzQuantities"
	"./stack FuzzDurations"
	"./stack FuzzNames"
	"./status FuzzPodIssues"
	"./fn FuzzInputTTL"
	"./fn FuzzObservedDecode"
	"./internal/wire FuzzComposedDecoder"
	"./internal/wire FuzzEncoder"
	"./fn FuzzPruneRequest"
	"./helm2stack FuzzConvert"
	"./test/fuzz FuzzRunFunction"
	"./test/fuzz FuzzObserved"
)

CACHE="${FUZZ_CACHE:-}"
if [[ -z "${CACHE}" ]]; then
	CACHE="$(mktemp -d)"
	trap 'rm -rf "${CACHE}"' EXIT
fi
mkdir -p "${CACHE}"

selected() {
	[[ -z "${FUZZ_TARGETS:-}" ]] && return 0
	local t
	for t in ${FUZZ_TARGETS}; do
		[[ "$t" == "$1" ]] && return 0
	done
	return 1
}

# Build each package's instrumented test binary first, so the times below
# are fuzzing, not compiling.
for pkg in ./fn ./internal/wire ./helm2stack ./test/fuzz; do
	"${GO}" test -run '^$' -fuzz '^$' -count=1 "${pkg}" >/dev/null
done

summary="${OUT}/summary.md"
{
	echo "| target | package | time | executions | per second | corpus | result |"
	echo "|---|---|---|---|---|---|---|"
} >"${summary}"

failed=0
for entry in "${ALL[@]}"; do
	read -r pkg target <<<"${entry}"
	selected "${target}" || continue
	log="${OUT}/${target}.log"
	fuzztime="${FUZZTIME}"
	[[ "${pkg}" == ./test/fuzz ]] && fuzztime="${FUZZTIME_E2E}"
	echo "== ${target} (${pkg}, ${fuzztime})"
	start=$(date +%s)
	result=ok
	if ! "${GO}" test -run '^$' -fuzz "^${target}\$" -fuzztime "${fuzztime}" -fuzzminimizetime "${FUZZ_MINIMIZE}" \
		"${pkg}" -args -test.fuzzcachedir="${CACHE}/${target}" >"${log}" 2>&1; then
		result=FAILED
		failed=1
		grep -v '^fuzz: elapsed' "${log}" | tail -n 40 >&2 || true
	fi
	secs=$(($(date +%s) - start))
	# The last progress line: "fuzz: elapsed: 8s, execs: 12345 (1543/sec), new interesting: 3 (total: 381)"
	last="$(grep -E '^fuzz: elapsed: .*execs: [0-9]+' "${log}" | tail -n 1 || true)"
	execs="$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"${last}")"
	corpus="$(sed -nE 's/.*\(total: ([0-9]+)\).*/\1/p' <<<"${last}")"
	execs="${execs:-0}"
	# No progress line with executions: the run ended while the seeds were
	# replayed, and no new input was tried.
	if [[ -z "${last}" && "${result}" == ok ]]; then
		result="baseline only: raise the fuzz time"
	fi
	rate=$((secs > 0 ? execs / secs : execs))
	echo "| ${target} | ${pkg#./} | ${secs}s | ${execs} | ${rate} | ${corpus:-?} | ${result} |" >>"${summary}"
	echo "   ${execs} executions in ${secs}s (${rate}/s), corpus ${corpus:-?}: ${result}"
done

echo
cat "${summary}"
if [[ "${failed}" -ne 0 ]]; then
	echo "fuzzing failed: the failing inputs are in testdata/fuzz/ of each package; go test runs them" >&2
	exit 1
fi
