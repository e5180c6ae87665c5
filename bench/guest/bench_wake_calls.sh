#!/bin/sh
# Benchmark (not a test): how many kfunc and helper calls each request of
# wakeup_bench makes, per scheduler, from kprobes the kernel counts (perf
# stat on kprobe events). Driven by bench/wake_calls.
#   bench_wake_calls.sh SCHEDULERS...
# CALLS_WORKLOAD=pipe-pinned: per round trip of `perf bench sched pipe` on
# one CPU instead (PIPE_LOOPS of them, default 20000).
#   BENCH calls SCHED FUNCTION CALLS_PER_REQUEST
#   BENCH ops SCHED PROG CALLS_PER_REQUEST
# Under TCG every call and return is dear (a return is an indirect jump the
# emulator looks up): the count is the cost a scheduler can cut.
. /opt/chameleon/guest/lib.sh
. /opt/chameleon/guest/bench_lib.sh
TEST=bench_wake_calls
S=${WAKEUP_S:-3}
SPIN=${WAKEUP_SPIN:-10000}
T=/sys/kernel/tracing
[ -d $T/events ] || mount -t tracefs nodev $T || fail "no tracefs"

# Every kfunc and helper a scheduler may call on its paths.
grep -E '^(scx_bpf_[a-z0-9_]*|__scx_bpf_[a-z0-9_]*|bpf_iter_[a-z0-9_]*|bpf_task_storage_get[a-z_]*|bpf_ktime_get_ns|bpf_get_current_task_btf|bpf_cpumask_[a-z_]*|bpf_cgroup_[a-z_]*|bpf_ringbuf_[a-z_]*|bpf_task_from_pid|bpf_task_release|bpf_jiffies64|bpf_probe_read_kernel|bpf_rcu_read_[a-z]*|bpf_map_lookup_elem|bpf_for_each_map_elem|bpf_loop|__htab_map_lookup_elem|htab_map_lookup_elem|bpf_local_storage_lookup)$' \
	$T/available_filter_functions | sort -u >/tmp/fns
n=0
while read -r f; do
	echo "p:kprobes/c_$n $f" >>$T/kprobe_events 2>/dev/null && echo "c_$n $f" >>/tmp/map
	n=$((n + 1))
done </tmp/fns
ok "$(wc -l </tmp/map) kprobes: $(cut -d" " -f2 </tmp/map | tr "\n" " ")"

census() {
	echo 1 >/proc/sys/kernel/bpf_stats_enabled
	bpf_progs >/tmp/b0
	if [ "${CALLS_WORKLOAD:-wakeup}" = pipe-pinned ]; then
		nreq=${PIPE_LOOPS:-20000}
		set -- "$1" taskset -c 1 perf bench sched pipe -l "$nreq"
	else
		set -- "$1" wakeup_bench -m 2 -w 4 -r "$S" -s "$SPIN"
	fi
	_s=$1
	shift
	perf stat -a -x, -e 'kprobes:*' -o /tmp/ps.out -- "$@" >/tmp/ws.out 2>/tmp/ws.err ||
		fail "perf stat: $(tail -n 3 /tmp/ws.err | tr '\n' '|')"
	set -- "$_s"
	bpf_progs >/tmp/b1
	echo 0 >/proc/sys/kernel/bpf_stats_enabled
	echo "BENCH bench $1 $(grep -E 'rps=|Total time' /tmp/ws.out | tr -s ' \n' ' ')"
	[ "${CALLS_WORKLOAD:-wakeup}" = pipe-pinned ] ||
		nreq=$(sed -n 's/.*rps=\([0-9.]*\).*/\1/p' /tmp/ws.out | awk -v s="$S" '{ printf "%d", $1 * s }')
	awk -F, -v s="$1" -v N="$nreq" 'NR == FNR { split($0, a, " "); name[a[1]] = a[2]; next }
		$3 ~ /^kprobes:/ { k = $3; sub(/^kprobes:/, "", k); if ($1 + 0 > 0 && N > 0) {
			printf "BENCH calls %s %s %.2f\n", s, name[k], $1 / N; tot += $1 } }
		END { if (N > 0) printf "BENCH calls %s TOTAL %.2f\n", s, tot / N }' /tmp/map /tmp/ps.out
	awk -v s="$1" -v N="$nreq" 'NR == FNR { c[$1] = $3; t[$1] = $2; next }
		{ dc = $3 - c[$1]; if (dc > 0 && N > 0) printf "BENCH ops %s %s %.2f %.0f\n", s, $1, dc / N, ($2 - t[$1]) / N }' /tmp/b0 /tmp/b1
}

for s in "$@"; do
	start_sched "$s"
	census "$s"
	stop_sched "$s"
done
echo "PASS $TEST"
