#!/usr/bin/env bash
# kcat workload against the same targets as `iggy-kafka-bench compare`:
# for each target, `kcat -P -l` of a generated file (N lines of S random
# alphanumerics) and `kcat -C -e` of the same records, timed by wall clock,
# repeated R times interleaved (every target once, then again). Each target
# is started on 127.0.0.1 by `iggy-kafka-bench serve` and stopped after its
# run; every kcat call is bounded by `timeout`.
#
#   bench/kcat.sh [-n records] [-s bytes] [-r reps] [-t "gateway kfake kafka"] [-g gateway-binary]
#
# Prints a markdown table (medians) to stdout and progress to stderr.
# Needs kcat (apt-get install kcat); the kafka target needs Java and
# bench/kafka/fetch.sh, and is skipped without them.
set -euo pipefail

records=1000000
size=100
reps=3
targets="gateway kfake kafka"
gwbin=""
while getopts "n:s:r:t:g:h" o; do
	case $o in
	n) records=$OPTARG ;;
	s) size=$OPTARG ;;
	r) reps=$OPTARG ;;
	t) targets=$OPTARG ;;
	g) gwbin=$OPTARG ;;
	*) sed -n '2,14p' "$0"; exit 2 ;;
	esac
done

command -v kcat >/dev/null || { echo "kcat.sh: kcat not found (apt-get install kcat)" >&2; exit 1; }
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
server_pid=""
cleanup() {
	if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
	rm -rf "$work"
}
trap cleanup EXIT

echo "building the harness and the gateway" >&2
(cd "$root" && go build -o "$work/iggy-kafka-bench" ./cmd/iggy-kafka-bench)
if [ -n "$gwbin" ]; then
	cp "$gwbin" "$work/iggy-kafka-gateway"
else
	(cd "$root" && go build -o "$work/iggy-kafka-gateway" ./cmd/iggy-kafka-gateway)
fi

echo "generating $records records of $size bytes" >&2
data="$work/records.txt"
# tr and fold die of SIGPIPE when head has enough: not an error here.
(set +o pipefail; LC_ALL=C tr -dc 'a-zA-Z0-9' </dev/urandom | fold -w "$size" | head -n "$records" >"$data")
[ "$(wc -l <"$data")" -eq "$records" ] || { echo "kcat.sh: generating the records failed" >&2; exit 1; }
bytes=$((records * size))

now() { date +%s.%N; }

# start_target NAME TOPIC: starts it in the background, sets addr and server_pid.
start_target() {
	local out="$work/serve.out"
	: >"$out"
	(cd "$root" && exec "$work/iggy-kafka-bench" serve --target "$1" --topic "$2" --gateway-bin "$work/iggy-kafka-gateway") >"$out" 2>"$work/serve.err" &
	server_pid=$!
	for _ in $(seq 1 900); do
		if grep -q '^ADDR ' "$out"; then
			addr=$(awk '/^ADDR /{print $2}' "$out")
			return 0
		fi
		if ! kill -0 "$server_pid" 2>/dev/null; then break; fi
		sleep 0.1
	done
	echo "kcat.sh: $1 did not start:" >&2
	tail -5 "$work/serve.err" >&2
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
	return 1
}

stop_target() {
	kill "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}

results="$work/results.tsv"
: >"$results"
for rep in $(seq 1 "$reps"); do
	for t in $targets; do
		topic="kcat-$rep"
		if ! start_target "$t" "$topic"; then
			echo "$t skipped" >&2
			continue
		fi
		t0=$(now)
		timeout 120 kcat -P -b "$addr" -t "$topic" -l -X linger.ms=5 -X batch.num.messages=10000 "$data"
		t1=$(now)
		hwm=$(timeout 30 kcat -Q -b "$addr" -t "$topic:0:-1" | awk '{print $NF}')
		t2=$(now)
		timeout 120 kcat -C -b "$addr" -t "$topic" -o beginning -e -c "$records" -q >/dev/null
		t3=$(now)
		stop_target
		awk -v t="$t" -v p="$(echo "$t1 - $t0" | bc)" -v c="$(echo "$t3 - $t2" | bc)" -v h="$hwm" \
			'BEGIN { printf "%s\t%s\t%s\t%s\n", t, p, c, h }' >>"$results"
		echo "[$rep/$reps] $t: produce $(echo "$t1 - $t0" | bc)s, consume $(echo "$t3 - $t2" | bc)s, high watermark $hwm" >&2
	done
done

echo "| target | runs | produce s (median) | produce rec/s | produce MB/s | consume s (median) | consume rec/s | consume MB/s | every record stored |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
for t in $targets; do
	awk -F'\t' -v t="$t" -v n="$records" -v b="$bytes" '
		function median(a, k,   i, j, x) {
			for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
			return a[int((k + 1) / 2)]
		}
		$1 == t { k++; p[k] = $2; c[k] = $3; if ($4 != n) bad = 1 }
		END {
			if (k == 0) { printf "| %s | 0 | skipped | | | | | | |\n", t; exit }
			mp = median(p, k); mc = median(c, k)
			printf "| %s | %d | %.3f | %.0f | %.1f | %.3f | %.0f | %.1f | %s |\n", t, k, mp, n / mp, b / mp / 1e6, mc, n / mc, b / mc / 1e6, bad ? "NO" : "yes"
		}' "$results"
done
