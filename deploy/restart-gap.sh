#!/usr/bin/env bash
# Measures how long a single sluice refuses connections across a restart
# (SIGTERM, then the same command again, as systemctl restart does): from
# the SIGTERM to the first PONG of the new process, over a snapshot of
# KEYS keys. Usage: deploy/restart-gap.sh [path/to/sluice] [KEYS] [ROUNDS]
set -euo pipefail
bin=${1:-bin/sluice}
keys=${2:-100000}
rounds=${3:-5}
port=${PORT:-6399}
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null && wait $pid; rm -rf "$dir"' EXIT

ping() { # one PING; true on +PONG
	{ exec 3<>"/dev/tcp/127.0.0.1/$port"; } 2>/dev/null || return 1
	printf '*1\r\n$4\r\nPING\r\n' >&3
	local line
	read -r -t 1 line <&3 || { exec 3<&-; return 1; }
	exec 3<&-
	[[ $line == +PONG* ]]
}
start() {
	"$bin" --port "$port" --dir "$dir" --save 3600 --loglevel warning 2>>"$dir/log" &
	pid=$!
}
start
until ping; do sleep 0.01; done
# Fill the key space: KEYS token buckets, pipelined.
for ((i = 0; i < keys; i++)); do
	printf '*5\r\n$8\r\nRL.TOKEN\r\n$%d\r\nk:%d\r\n$3\r\n1/h\r\n$2\r\n10\r\n$1\r\n1\r\n' "$((${#i} + 2))" "$i"
done > "$dir/fill"
exec 4<>"/dev/tcp/127.0.0.1/$port"
cat "$dir/fill" >&4
for ((i = 0; i < keys; i++)); do # each reply: *N, then N integers
	read -r head <&4
	head=${head%$'\r'}
	for ((j = 0; j < ${head#\*}; j++)); do read -r _ <&4; done
done
printf '*1\r\n$6\r\nDBSIZE\r\n' >&4
read -r n <&4
exec 4<&-
kill -TERM "$pid"
wait "$pid" || true
echo "keys: ${n#:}; snapshot: $(stat -c %s "$dir/sluice.snap") bytes"
start
until ping; do sleep 0.01; done
for ((r = 1; r <= rounds; r++)); do
	t0=$(date +%s%N)
	kill -TERM "$pid"
	wait "$pid" || true
	start
	until ping; do sleep 0.001; done
	t1=$(date +%s%N)
	echo "round $r: $(((t1 - t0) / 1000000)) ms without service ($keys keys)"
done
