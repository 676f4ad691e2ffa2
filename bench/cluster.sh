#!/usr/bin/env bash
# Produce and consume throughput through 1, 2 and 3 gateways in cluster mode
# over one real Iggy server (docs/PERFORMANCE.md, "Cluster mode").
#   usage: ETCD=http://127.0.0.1:29379 bench/cluster.sh [RECORDS]   (from the module root)
# Needs a running etcd at $ETCD (any v3) and the Iggy server of
# $IGGY_KAFKA_IGGY_SERVER_DIR (default ../shared/iggy/server); uses ports
# 29090 (Iggy) and 29101-29103 (gateways). Prints, per run, the bench's line
# and the CPU seconds of each gateway and of the Iggy server.
set -euo pipefail
records=${1:-2000000}
etcd=${ETCD:?set ETCD to an etcd client URL}
server=${IGGY_KAFKA_IGGY_SERVER_DIR:-../shared/iggy/server}
work=$(mktemp -d)
go build -o "$work/gw" ./cmd/iggy-kafka-gateway
go build -o "$work/bench" ./cmd/iggy-kafka-bench
"$server/run.sh" "$work/iggy" 29090 >"$work/iggy.log" 2>&1 &
iggy=$!
trap 'kill -TERM $iggy 2>/dev/null; wait; rm -rf "$work"' EXIT
sleep 4
cpu() { awk '{printf "%.2f", ($14+$15)/100}' "/proc/$1/stat"; }
run=$(date +%s)
for n in 1 2 3; do
	pids=() brokers=""
	for i in $(seq 1 "$n"); do
		"$work/gw" --bind-addr "127.0.0.1:2910$i" --backend iggy --iggy-addr 127.0.0.1:29090 --fsync never \
			--log-level warn --cluster-etcd-endpoints "$etcd" --cluster-id "bench-$run-$n" --instance-id "$i" \
			--stream "bench-$run-$n" --iggy-state-stream "bench-$run-$n.gw" --default-partitions 12 \
			>"$work/gw$n-$i.log" 2>&1 &
		pids+=($!)
		brokers="$brokers${brokers:+,}127.0.0.1:2910$i"
	done
	sleep 4
	for op in produce consume; do
		before=()
		for p in "${pids[@]}" "$iggy"; do before+=("$(cpu "$p")"); done
		extra=()
		[ "$op" = produce ] && extra=(--partitions 12)
		"$work/bench" "$op" --brokers "$brokers" --topic t --records "$records" --max-duration 60s "${extra[@]}" \
			--md - | grep '^| 127'
		line="gateways=$n $op cpu_s:"
		j=0
		for p in "${pids[@]}"; do
			line="$line gw$((j + 1))=$(echo "$(cpu "$p") - ${before[$j]}" | bc)"
			j=$((j + 1))
		done
		echo "$line iggy=$(echo "$(cpu "$iggy") - ${before[$j]}" | bc)"
	done
	kill -TERM "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null || true
done
