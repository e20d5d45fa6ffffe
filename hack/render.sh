#!/usr/bin/env bash
# Render an XR through the locally built function with `crossplane render`.
#
# Usage:
#   hack/render.sh [XR] [COMPOSITION] [FUNCTIONS] [-- EXTRA_RENDER_ARGS...]
#
# Defaults: example/xr.yaml example/composition.yaml example/functions.yaml.
#
# The function binary is started in the background with
# `--insecure --address 127.0.0.1:<free port> --metrics-address=`; FUNCTIONS (a file or a
# directory of YAML files) is copied to a temp dir with every
# `render.crossplane.io/runtime-development-target: <host>:9443` annotation
# pointed at that port. The function is always stopped on exit, also on
# failure or Ctrl-C. Standard output holds only the rendered YAML (make
# render > stack.yaml; test/render TestMakeRenderStdout): every message of
# this script goes to stderr, and the function's log is printed to stderr
# when something fails (or always with RENDER_SHOW_LOG=1).
#
# Environment:
#   FUNCTION_BIN     function binary           (default _output/bin/function)
#   CROSSPLANE       crossplane CLI            (default .tools/bin/crossplane)
#   RENDER_ARGS      extra `crossplane render` args, word-split
#                    (e.g. "--include-function-results --observed-resources=x.yaml")
#   FUNCTION_ARGS    extra function flags, word-split (e.g. "--debug")
#   CROSSPLANE_CORE  if set, a Crossplane core binary (cmd/crossplane >= v2.3) passed
#                    as --crossplane-binary; needs the newer CLI (github.com/crossplane/cli/v2)
#                    as CROSSPLANE. See `make render-v2`.
#   START_TIMEOUT    seconds to wait for the function to listen (default 30)
#   RENDER_SHOW_LOG  1 = always print the function log to stderr
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

FUNCTION_BIN="${FUNCTION_BIN:-${ROOT}/_output/bin/function}"
CROSSPLANE="${CROSSPLANE:-${ROOT}/.tools/bin/crossplane}"
START_TIMEOUT="${START_TIMEOUT:-30}"

xr="${ROOT}/example/xr.yaml"
composition="${ROOT}/example/composition.yaml"
functions="${ROOT}/example/functions.yaml"
positional=()
extra=()
while (($#)); do
	if [[ "$1" == "--" ]]; then
		shift
		extra=("$@")
		break
	fi
	positional+=("$1")
	shift
done
if ((${#positional[@]} > 3)); then
	echo "usage: $0 [XR] [COMPOSITION] [FUNCTIONS] [-- EXTRA_RENDER_ARGS...]" >&2
	exit 2
fi
[[ ${#positional[@]} -ge 1 ]] && xr="${positional[0]}"
[[ ${#positional[@]} -ge 2 ]] && composition="${positional[1]}"
[[ ${#positional[@]} -ge 3 ]] && functions="${positional[2]}"

# Word-split RENDER_ARGS / FUNCTION_ARGS on purpose (Make passes them as one string).
read -r -a render_args <<<"${RENDER_ARGS:-}"
read -r -a function_args <<<"${FUNCTION_ARGS:-}"
if [[ -n "${CROSSPLANE_CORE:-}" ]]; then
	if [[ ! -x "$CROSSPLANE_CORE" ]]; then
		echo "render.sh: CROSSPLANE_CORE=$CROSSPLANE_CORE not found or not executable (run: make tools-v2)" >&2
		exit 1
	fi
	render_args=(--crossplane-binary="$CROSSPLANE_CORE" "${render_args[@]}")
fi

for f in "$FUNCTION_BIN" "$CROSSPLANE"; do
	if [[ ! -x "$f" ]]; then
		echo "render.sh: $f not found or not executable (run: make build tools)" >&2
		exit 1
	fi
done
for f in "$xr" "$composition" "$functions"; do
	if [[ ! -e "$f" ]]; then
		echo "render.sh: $f does not exist" >&2
		exit 1
	fi
done

tmp="$(mktemp -d "${TMPDIR:-/tmp}/render.XXXXXX")"
fn_pid=""
xp_pid=""
show_log="${RENDER_SHOW_LOG:-0}"

# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
	local rc=$?
	if [[ -n "$xp_pid" ]]; then
		kill -TERM "$xp_pid" 2>/dev/null || true
		wait "$xp_pid" 2>/dev/null || true
	fi
	if [[ -n "$fn_pid" ]] && kill -0 "$fn_pid" 2>/dev/null; then
		kill -TERM "$fn_pid" 2>/dev/null || true
		# Give it up to ~5s to exit, then SIGKILL.
		for _ in $(seq 1 50); do
			kill -0 "$fn_pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$fn_pid" 2>/dev/null || true
		wait "$fn_pid" 2>/dev/null || true
	fi
	if [[ -f "$tmp/function.log" ]] && { [[ $rc -ne 0 ]] || [[ "$show_log" == 1 ]]; }; then
		echo "----- function log (${FUNCTION_BIN}) -----" >&2
		cat "$tmp/function.log" >&2 || true
		echo "----- end function log -----" >&2
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# port_in_use PORT: true if something accepts TCP connections on 127.0.0.1:PORT.
port_in_use() {
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Pick ports below the Linux ephemeral range (32768+) so they do not clash
# with outgoing connections; retry if the function fails to bind (race).
port=""
for attempt in 1 2 3 4 5; do
	candidate=$((20000 + (RANDOM % 12000)))
	if port_in_use "$candidate"; then
		continue
	fi
	: >"$tmp/function.log"
	"$FUNCTION_BIN" --insecure --address "127.0.0.1:${candidate}" --metrics-address= "${function_args[@]}" \
		>>"$tmp/function.log" 2>&1 &
	fn_pid=$!
	deadline=$((SECONDS + START_TIMEOUT))
	while ((SECONDS < deadline)); do
		if ! kill -0 "$fn_pid" 2>/dev/null; then
			break
		fi
		if port_in_use "$candidate"; then
			port="$candidate"
			break
		fi
		sleep 0.1
	done
	[[ -n "$port" ]] && break
	if kill -0 "$fn_pid" 2>/dev/null; then
		echo "render.sh: function did not listen on 127.0.0.1:${candidate} within ${START_TIMEOUT}s" >&2
		exit 1
	fi
	wait "$fn_pid" 2>/dev/null || true
	fn_pid=""
	if ! grep -qi "address already in use" "$tmp/function.log"; then
		echo "render.sh: function exited before listening on 127.0.0.1:${candidate}" >&2
		exit 1
	fi
	echo "render.sh: port ${candidate} taken meanwhile (attempt ${attempt}), retrying" >&2
done
if [[ -z "$port" ]]; then
	echo "render.sh: could not start the function on a free port" >&2
	exit 1
fi

# Point the Development runtime target(s) at the chosen port.
mkdir -p "$tmp/functions"
if [[ -d "$functions" ]]; then
	cp -R "$functions"/. "$tmp/functions/"
	fn_files=("$tmp/functions")
else
	cp "$functions" "$tmp/functions/functions.yaml"
	fn_files=("$tmp/functions/functions.yaml")
fi
sed_expr="s#(render\.crossplane\.io/runtime-development-target:[[:space:]]*[\"']?)(127\.0\.0\.1|localhost|dns:///localhost|dns:///127\.0\.0\.1):9443#\1127.0.0.1:${port}#"
find "$tmp/functions" -type f \( -name '*.yaml' -o -name '*.yml' \) -exec sed -E -i "$sed_expr" {} +
if ! grep -rqs "runtime-development-target:[[:space:]]*[\"']\{0,1\}127\.0\.0\.1:${port}" "$tmp/functions"; then
	echo "render.sh: no 'render.crossplane.io/runtime-development-target: 127.0.0.1:9443' annotation found in ${functions}" >&2
	exit 1
fi

# Run in the background and `wait` so that INT/TERM are handled at once
# (bash defers traps while a foreground child runs).
"$CROSSPLANE" render "$xr" "$composition" "${fn_files[0]}" "${render_args[@]}" "${extra[@]}" <&0 &
xp_pid=$!
set +e
wait "$xp_pid"
rc=$?
set -e
xp_pid=""
exit "$rc"
