#!/usr/bin/env bash
# Benchmark function-vllm-stack and print the results as Markdown tables.
#
# Usage:
#   hack/bench.sh
#
# 1. `go test -bench` of RunFunction (fn/bench_test.go) for a 1-model stack
#    (the seed, example/xr.yaml), an 8-model and a 32-model stack, each on the
#    first call of a reconcile and once the stack serves (observed objects
#    with status and managedFields, and what the function requires: no pods
#    once the stack serves), against the floor of the same payload: the
#    server codec's decoding of the request (pruned of what the function
#    never reads, then proto.Unmarshal) plus proto.Marshal of the response.
#    ratio = RunFunction / floor.
# 2. A gRPC load benchmark (bench/load): the built binary on 127.0.0.1, the
#    seed request from 1, 16 and 200 concurrent callers.
#
# Environment:
#   BENCHTIME   go test -benchtime           (default 1s)
#   COUNT       go test -count; the table shows medians (default 5)
#   LOAD_CALLS  calls per concurrency level  (default 4000)
#   SKIP_LOAD   1 = skip the gRPC load benchmark
#
# Raw `go test -bench` output is kept in _output/bench/fn.txt, e.g. for benchstat.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

GO="${GO:-go}"
BENCHTIME="${BENCHTIME:-1s}"
COUNT="${COUNT:-5}"
LOAD_CALLS="${LOAD_CALLS:-4000}"
OUT="${ROOT}/_output/bench"
mkdir -p "${OUT}"

echo "function-vllm-stack benchmarks: $(${GO} env GOVERSION) ${GOOS:-$(${GO} env GOOS)}/${GOARCH:-$(${GO} env GOARCH)}," \
	"$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//' || echo 'unknown CPU'), $(nproc) CPUs"
echo

${GO} test -run '^$' -bench '^Benchmark(RunFunction|Floor)$' -benchmem \
	-benchtime "${BENCHTIME}" -count "${COUNT}" ./fn >"${OUT}/fn.txt"

awk '
# Lines look like:
#   BenchmarkRunFunction/models-8-observed-2  1234  956789 ns/op  1234 req-bytes  ...  123 B/op  45 allocs/op
# The -2 is GOMAXPROCS (absent when it is 1).
/^Benchmark(RunFunction|Floor)\// {
	split($1, p, "/"); bench = p[1]; name = p[2]
	if (name ~ /^models-[0-9]+(-observed)?-[0-9]+$/) sub(/-[0-9]+$/, "", name)
	if (!(name in seen)) { seen[name] = 1; order[++n] = name }
	for (i = 3; i < NF; i += 2) { k = bench SUBSEP name SUBSEP $(i+1); vals[k] = vals[k] " " $i }
}
function median(s,   a, m, i, j, t) {
	m = split(s, a, " ")
	for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j+1] = a[j]; a[j+1] = t }
	return m % 2 ? a[(m+1)/2] : (a[m/2] + a[m/2+1]) / 2
}
function get(bench, name, unit) { return median(vals[bench, name, unit]) }
function human(b) { return b >= 1024 * 1024 ? sprintf("%.1f MiB", b / 1048576) : sprintf("%.1f KiB", b / 1024) }
END {
	printf "| %-18s | %10s | %9s | %10s | %11s | %5s | %9s | %13s |\n", "case", "ns/op", "allocs/op", "bytes/op", "floor ns/op", "ratio", "cpu ratio", "response size"
	printf "|%s|%s|%s|%s|%s|%s|%s|%s|\n", "--------------------", "-----------:", "----------:", "-----------:", "------------:", "------:", "----------:", "--------------:"
	for (i = 1; i <= n; i++) {
		c = order[i]
		ns = get("BenchmarkRunFunction", c, "ns/op"); floor = get("BenchmarkFloor", c, "ns/op")
		cpu = get("BenchmarkRunFunction", c, "cpu-ns/op"); cpufloor = get("BenchmarkFloor", c, "cpu-ns/op")
		printf "| %-18s | %10.0f | %9.0f | %10s | %11.0f | %4.1f× | %8.1f× | %13s |\n", c, ns,
			get("BenchmarkRunFunction", c, "allocs/op"), human(get("BenchmarkRunFunction", c, "B/op")),
			floor, ns / floor, (cpufloor > 0 ? cpu / cpufloor : 0), human(get("BenchmarkFloor", c, "rsp-bytes"))
		run[c] = ns
	}
	print ""
	print "floor: the server codec decoding the request (pruned, then proto.Unmarshal) + proto.Marshal of the response. cpu ratio: the same ratio in"
	print "CPU time of the process (all threads, GC included), less affected than ns/op by other load on the machine."
	for (obs = 0; obs <= 1; obs++) {
		s = obs ? "-observed" : ""
		if (("models-1" s) in run && ("models-32" s) in run)
			printf "32 models / 1 model%s: %.1f× the time\n", obs ? " (observed)" : "", run["models-32" s] / run["models-1" s]
	}
}' "${OUT}/fn.txt"

if [[ "${SKIP_LOAD:-}" == "1" ]]; then
	exit 0
fi
echo
BIN="${OUT}/function"
${GO} build -o "${BIN}" .
${GO} run ./bench/load -binary "${BIN}" -xr example/xr.yaml -calls "${LOAD_CALLS}"
