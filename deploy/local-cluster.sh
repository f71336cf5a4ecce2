#!/usr/bin/env bash
# Starts a sharded sluice cluster on 127.0.0.1 (docs/cluster.md): GROUPS data
# groups of 3 nodes, each node one process with one RESP port and one Raft port,
# and stops every node on Ctrl-C (or SIGTERM). `make cluster GROUPS=3` runs it.
#
#   deploy/local-cluster.sh [-g GROUPS] [-b BIN] [-d DIR] [-p PORT_BASE] [-w WAIT_SECONDS] [-- FLAGS…]
#
# FLAGS after -- go to every node (e.g. -- --cluster-proxy yes).
# Node i (1 .. 3*GROUPS, group by group) listens for RESP on PORT_BASE+i and for
# Raft on PORT_BASE+10000+i: with the default base 7000, group 1 is 7001-7003,
# group 2 7004-7006, group 3 7007-7009, and their Raft ports 17001-17009. With
# -p auto every node lets the kernel choose its ports (--port auto, --raft-bind
# 127.0.0.1:0) and reports them in its ports file; tests use that.
#
# Each group's first node bootstraps the group, so it is the group's first
# leader, and each process hosts one group's replica: the leaders sit on
# different processes. Group 1's first node also starts the meta group and is
# the seed every other node joins it through. The script waits until CLUSTER
# INFO says cluster_state:ok on every node, writes DIR/nodes (one "gXnY host:port"
# line per node) and prints the seed and a first command. A node that exits
# meanwhile stops the script, with its log. Logs: DIR/gXnY.log.
set -euo pipefail

ngroups=3 bin=bin/sluice dir=data/cluster base=7000 wait=60
while getopts g:b:d:p:w: opt; do
	case $opt in
	g) ngroups=$OPTARG ;;
	b) bin=$OPTARG ;;
	d) dir=$OPTARG ;;
	p) base=$OPTARG ;;
	w) wait=$OPTARG ;;
	*) echo "usage: $0 [-g GROUPS] [-b BIN] [-d DIR] [-p PORT_BASE|auto] [-w WAIT_SECONDS] [-- FLAGS…]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
extra=("$@")
[[ $ngroups =~ ^[1-9][0-9]*$ ]] || { echo "GROUPS must be a positive number, not '$ngroups'" >&2; exit 2; }
[[ $base == auto || $base =~ ^[0-9]+$ ]] || { echo "PORT_BASE must be a number or auto, not '$base'" >&2; exit 2; }

declare -A pid addr
names=()
stop() {
	trap - INT TERM EXIT
	for n in "${names[@]}"; do
		[[ -n ${pid[$n]:-} ]] && kill "${pid[$n]}" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	echo
	echo "cluster stopped (state kept in $dir)"
}
trap stop EXIT
trap 'exit 0' INT TERM # the way to stop it

# died fails the script if node $1 has exited, with the end of its log.
died() {
	if ! kill -0 "${pid[$1]}" 2>/dev/null; then
		echo "node $1 exited; the end of $dir/$1.log:" >&2
		tail -n 30 "$dir/$1.log" >&2 || true
		exit 1
	fi
}

# start launches node $1 of group $2 (index $3, from 1) with more flags.
start() {
	local n=$1 g=$2 i=$3
	shift 3
	local port=auto raft=127.0.0.1:0
	if [[ $base != auto ]]; then
		port=$((base + i)) raft=127.0.0.1:$((base + 10000 + i))
	fi
	mkdir -p "$dir/$n"
	rm -f "$dir/$n.ports"
	"$bin" --bind 127.0.0.1 --port "$port" --ports-file "$dir/$n.ports" --node-id "$n" --raft-bind "$raft" \
		--dir "$dir/$n" --cluster-group "$g" --cluster-groups "$ngroups" --loglevel warning "$@" ${extra[@]+"${extra[@]}"} \
		>"$dir/$n.log" 2>&1 &
	pid[$n]=$!
	names+=("$n")
}

# address waits for node $1's ports file and sets addr[$1] to its RESP address.
address() {
	local deadline=$((SECONDS + wait))
	while [[ ! -s $dir/$1.ports ]]; do
		died "$1"
		((SECONDS < deadline)) || { echo "node $1: no ports file after ${wait}s" >&2; exit 1; }
		sleep 0.1
	done
	addr[$1]=$(awk '$1 == "resp" { print $2; exit }' "$dir/$1.ports")
}

# clusterOK reports whether the node at host:port $1 answers cluster_state:ok.
clusterOK() {
	local fd line
	exec {fd}<>"/dev/tcp/${1%:*}/${1##*:}" 2>/dev/null || return 1
	printf '*2\r\n$7\r\nCLUSTER\r\n$4\r\nINFO\r\n' >&"$fd"
	IFS= read -r -t 2 line <&"$fd" || true
	IFS= read -r -t 2 line <&"$fd" || true
	exec {fd}>&-
	[[ $line == cluster_state:ok* ]]
}

mkdir -p "$dir"
start g1n1 1 1 --bootstrap yes
address g1n1
seed=${addr[g1n1]}
for ((g = 2; g <= ngroups; g++)); do
	start "g${g}n1" "$g" $((3 * g - 2)) --bootstrap yes --cluster-seed "$seed"
done
for ((g = 2; g <= ngroups; g++)); do address "g${g}n1"; done
for ((g = 1; g <= ngroups; g++)); do
	for m in 2 3; do
		start "g${g}n$m" "$g" $((3 * g - 3 + m)) --join "${addr[g${g}n1]}" --cluster-seed "$seed"
	done
done
for n in "${names[@]}"; do address "$n"; done

deadline=$((SECONDS + wait))
for n in "${names[@]}"; do
	until clusterOK "${addr[$n]}"; do
		died "$n"
		((SECONDS < deadline)) || { echo "node $n (${addr[$n]}): no cluster_state:ok after ${wait}s" >&2; exit 1; }
		sleep 0.2
	done
done

: >"$dir/nodes.tmp"
for n in "${names[@]}"; do echo "$n ${addr[$n]}" >>"$dir/nodes.tmp"; done
mv "$dir/nodes.tmp" "$dir/nodes"
port=${seed##*:}
echo "$ngroups groups of 3 nodes up, cluster_state:ok on all ${#names[@]} (addresses in $dir/nodes, logs in $dir/*.log)"
echo "seed: $seed"
echo "  redis-cli -c -p $port RL.TOKEN user:42 10/s 20"
echo "  redis-cli -p $port CLUSTER SHARDS"
echo "Ctrl-C stops all ${#names[@]}."
while :; do
	for n in "${names[@]}"; do died "$n"; done
	sleep 1
done
