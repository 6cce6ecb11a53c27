#!/usr/bin/env bash
# Runs the library's own package again and again with one core kept busy,
# to find tests that fail only on a loaded machine: RUNS runs (default 10),
# the 1st, 5th and 9th under -race, stopping at the first failure, whose
# output it keeps. Usage: ./soak.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")"
runs=${1:-10}
out=$(mktemp -d)
go test -c -o "$out/plain.test" .
go test -race -c -o "$out/race.test" .
yes > /dev/null &
busy=$!
trap 'kill $busy' EXIT
for i in $(seq 1 "$runs"); do
	bin=plain
	case $i in 1 | 5 | 9) bin=race ;; esac
	start=$(date +%s)
	if ! "$out/$bin.test" -test.count=1 -test.timeout 20m > "$out/run$i.log" 2>&1; then
		grep -E -- "^(--- FAIL|    --- FAIL|panic)" "$out/run$i.log" >&2 || true
		echo "run $i ($bin) failed after $(($(date +%s) - start)) s; output in $out/run$i.log" >&2
		exit 1
	fi
	echo "run $i ($bin) passed in $(($(date +%s) - start)) s"
done
