#!/bin/sh
# Benchmark (not a test): fuse and split latency of one object against sysfs
# hotplug of the same CPU, in one VM run. Driven by bench/fuse_split_latency.
#   bench_latency.sh SECONDS HOTPLUG_ROUNDS
. /opt/chameleon/guest/lib.sh
TEST=bench
secs=${1:-25} rounds=${2:-20}

make_cgroup seq
start_agent --events --tag seq=level:1,tax:1
spin -c 1 $((secs + 1)) >/dev/null &
b=$!
sleep 0.5
spin -g /sys/fs/cgroup/seq "$secs" >/dev/null &
wait $! $b
stop_agent
# Hotplug of the same CPU, idle and then busy (the fuses above preempted a
# busy cpu1, so the busy figures are the like-for-like baseline).
hotplug_time 1 "$rounds" >/tmp/hotplug.log || fail "hotplug failed"
stress-ng --cpu "$(nproc)" --timeout 600 >/dev/null 2>&1 &
load=$!
sleep 1
hotplug_time 1 "$rounds" >/tmp/hotplug_busy.log || fail "hotplug under load failed"
kill $load; wait $load 2>/dev/null

# pct FILE P: the P-th percentile of the numbers in FILE (nearest rank).
pct() {
	sort -n "$1" | awk -v p="$2" '{ v[NR] = $1 } END {
		if (!NR) { print "-"; exit }
		i = int(p / 100 * NR + 0.999999); if (i < 1) i = 1; if (i > NR) i = NR; print v[i] }'
}
field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
us() { awk -v n="$1" 'BEGIN { if (n == "-") print "-"; else printf "%.1f", n / 1000 }'; }

# The critical path: the deciding CPU's cost plus the borrowed CPU's own
# work, each timed locally (bare metal adds one IPI between them).
critical() { awk '{ c = l = ""; for (i = 1; i <= NF; i++) {
	if ($i ~ /^cost_ns=/) c = substr($i, 9); if ($i ~ /^local_ns=/) l = substr($i, 10) }
	if (c != "" && l != "") print c + l }'; }
for k in fuse split; do
	grep -E "^event  *$k .*cpus=0,1 " "$AGENT_LOG" >/tmp/$k.ev
	grep -v superseded /tmp/$k.ev | field latency_ns >/tmp/$k.lat
	field cost_ns </tmp/$k.ev >/tmp/$k.cost
	grep -v superseded /tmp/$k.ev | field local_ns >/tmp/$k.local
	grep -v superseded /tmp/$k.ev | critical >/tmp/$k.crit
done
field offline_ns </tmp/hotplug.log >/tmp/off.lat
field online_ns </tmp/hotplug.log >/tmp/on.lat
field offline_ns </tmp/hotplug_busy.log >/tmp/off_busy.lat
field online_ns </tmp/hotplug_busy.log >/tmp/on_busy.lat
sup_f=$(grep -E "^event  *fuse .*superseded" "$AGENT_LOG" | grep -c .)
sup_s=$(grep -E "^event  *split .*superseded" "$AGENT_LOG" | grep -c .)

echo "BENCH kernel=$(uname -r) cpus=$(nproc) tcg=single object={0,1} tax=1 run=${secs}s"
printf 'BENCH %-32s %7s %10s %10s %10s\n' "what (us)" n p50 p99 max
row() {
	printf 'BENCH %-32s %7s %10s %10s %10s\n' "$1" "$(grep -c . "$2")" \
		"$(us "$(pct "$2" 50)")" "$(us "$(pct "$2" 99)")" "$(us "$(pct "$2" 100)")"
}
row "fuse end-to-end (decision->idle)" /tmp/fuse.lat
row "fuse decision cost (rep CPU)" /tmp/fuse.cost
row "fuse local work (borrowed CPU)" /tmp/fuse.local
row "fuse critical path (cost+local)" /tmp/fuse.crit
row "split end-to-end (decision->back)" /tmp/split.lat
row "split decision cost (rep CPU)" /tmp/split.cost
row "split local work (given-back CPU)" /tmp/split.local
row "split critical path (cost+local)" /tmp/split.crit
row "sysfs offline cpu1, idle VM" /tmp/off.lat
row "sysfs online cpu1, idle VM" /tmp/on.lat
row "sysfs offline cpu1, all CPUs busy" /tmp/off_busy.lat
row "sysfs online cpu1, all CPUs busy" /tmp/on_busy.lat
echo "BENCH superseded (excluded from end-to-end): fuse=$sup_f split=$sup_s"
ratio() { # ratio NUM_FILE DEN_FILE P
	awk -v a="$(pct "$1" "$3")" -v b="$(pct "$2" "$3")" 'BEGIN { if (b > 0) printf "%.0f", a / b; else print "-" }'
}
for load in "" _busy; do
	echo "BENCH ratio p50 (hotplug ${load:-_idle}): offline/fuse-e2e=$(ratio /tmp/off$load.lat /tmp/fuse.lat 50)x online/split-e2e=$(ratio /tmp/on$load.lat /tmp/split.lat 50)x offline/fuse-critical=$(ratio /tmp/off$load.lat /tmp/fuse.crit 50)x online/split-critical=$(ratio /tmp/on$load.lat /tmp/split.crit 50)x"
done
[ "$(grep -c . /tmp/fuse.lat)" -ge 1000 ] || echo "BENCH note: fewer than 1000 fuse samples"
