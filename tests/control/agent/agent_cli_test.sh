#!/usr/bin/env bash
# ofan-agent's command line: --help, bad flags and config (exit 2), an
# unreachable ofan-dp under --once (exit 1, said plainly), SIGTERM (exit 0).
set -u
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
expect() {  # expect CODE ARGS...: runs the agent, checks the exit code
  local want=$1; shift
  "$bin" "$@" >"$dir/out" 2>"$dir/err"
  local got=$?
  [[ $got == "$want" ]] || fail "ofan-agent $* exited $got, want $want: $(cat "$dir/err")"
}
expect 0 --help
grep -q -- '--lldpcli-socket' "$dir/out" || fail "--help lists no --lldpcli-socket"
grep -q 'Exit codes' "$dir/out" || fail "--help lists no exit codes"
expect 2 --bogus
expect 2 --k 4 --levels 3                      # no switch
expect 2 --k 4 --levels 3 --switch-id 999 --socket "$dir/s"
grep -q 'does not exist' "$dir/err" || fail "unknown switch: $(cat "$dir/err")"
expect 2 --k 5 --levels 3 --switch-id 0 --socket "$dir/s"
expect 2 --config "$dir/missing.yaml"
grep -q 'missing.yaml' "$dir/err" || fail "missing config: $(cat "$dir/err")"
expect 2 --k 4 --levels 3 --switch-id 0 --socket "$dir/s" --frr-dir "$dir/nodir"
expect 2 --k 4 --levels 3 --switch-id 0 --socket "$dir/s" --frr-dir "$dir" --bfd-interval-ms 0
expect 2 --k 4 --levels 3 --switch-id 0 --interval-ms 0 --socket "$dir/s"
# A config file names the switch and its socket.
printf 'name: a0-0\nfabric: {k: 4, levels: 3, switch: 8}\ncontrol: {socket: %s}\n' \
  "$dir/dp.sock" >"$dir/a.yaml"
PATH="$dir/nobin" expect 1 --config "$dir/a.yaml" --once --json
grep -q "ofan-dp at $dir/dp.sock unreachable" "$dir/err" || fail "no unreachable message: $(cat "$dir/err")"
python3 -c 'import json,sys; s=json.loads(open(sys.argv[1]).read()); assert s["switch"]=="a0-0" and s["masks"]["action"]=="held", s' "$dir/out" ||
  fail "--json: $(cat "$dir/out")"
# --status-file: the cycle's status, the same object --json prints.
expect 2 --config "$dir/a.yaml" --once --status-file "$dir/nodir/status.json"
grep -q 'not a writable directory' "$dir/err" || fail "--status-file nodir: $(cat "$dir/err")"
PATH="$dir/nobin" expect 1 --config "$dir/a.yaml" --once --json --status-file "$dir/status.json"
cmp -s "$dir/out" "$dir/status.json" || fail "--status-file differs from --json: $(cat "$dir/status.json")"
# SIGTERM ends the loop with 0, at once.
PATH="$dir/nobin" "$bin" --config "$dir/a.yaml" --interval-ms 100000 >/dev/null 2>&1 &
pid=$!
sleep 0.3
kill -TERM "$pid"
wait "$pid"
rc=$?
[[ $rc == 0 ]] || fail "SIGTERM: exit $rc"
echo ok
