#!/usr/bin/env bash
# Runs the whole test suite against real redis-server processes that the tests
# start on free loopback ports. Installs redis-server and redis-sentinel from
# Debian's packages when they are missing.
set -euo pipefail
cd "$(dirname "$0")"

missing=""
command -v redis-server >/dev/null 2>&1 || missing="redis-server"
command -v redis-sentinel >/dev/null 2>&1 || missing="$missing redis-sentinel"
if [ -n "$missing" ]; then
	echo "not found:$missing; installing with apt-get" >&2
	sudo=""
	[ "$(id -u)" -eq 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null
fi
redis-server --version

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
# The library first, alone: its tests time real servers most closely. The
# tests of server topologies (Redis Cluster, Sentinel, replicas) run four
# at a time: they mostly wait for the servers to agree.
echo "== ." >&2
go vet ./... && go test -race -count=1 -parallel 4 -timeout 15m ./...

# The library's go.mod declares the oldest Go it supports: vet and test it
# with that toolchain as well, which the go command fetches from the module
# proxy. Vet compiles every package and test. The run leaves out the Redis
# Cluster, Sentinel and replica tests, over half of the library's time:
# they exercise server topologies, not the Go toolchain, and the -race run
# above has them.
oldest_toolchain() {
	oldest=$(sed -n 's/^go \([0-9][0-9.]*\)$/go\1/p' go.mod)
	case "$oldest" in go1.*.*) ;; go1.*) oldest="$oldest.0" ;; esac
	echo "== . with $oldest"
	GOTOOLCHAIN=$oldest go vet ./...
	GOTOOLCHAIN=$oldest go test -count=1 -timeout 15m -skip 'RedisCluster|redisCluster|Sentinel|Replica|SilentNode_boundedMemory' ./...
}

# The tools that use the library from this checkout (replace directives),
# each module with its own dependencies.
tools() {
	for module in cmd/redlock torture; do
		echo "== $module"
		(cd "$module" && go vet ./... && go test -race -count=1 -timeout 15m ./...)
	done
	echo "== bench"
	(cd bench && go vet ./... && go test -count=1 -timeout 10m ./...)
}

# The two run side by side, each into a log of its own printed when both
# are done: most of their time is spent waiting on servers, not computing.
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
oldest_toolchain >"$logs/oldest" 2>&1 &
oldest_pid=$!
tools >"$logs/tools" 2>&1 &
tools_pid=$!
status=0
wait "$tools_pid" || status=$?
wait "$oldest_pid" || status=$?
cat "$logs/tools" "$logs/oldest" >&2
exit "$status"
