#!/bin/sh
# Hybrid CPUs, with a capacity override standing in for P and E cores: 4
# CPUs (2 cores x 2 threads), --cpu-capacity makes CPUs 2-3 the fast core
# (1024) and 0-1 the slow one (512), against id order. Checked:
#   - a tagged sequential task's object is the fast core, its representative
#     CPU 2 (status), and the kernel runs the task there (/proc/PID/stat's
#     processor field, sampled) while CPU 3 idles for it (/proc/stat idle
#     over a monotonic window, with the task's schedstat adding up);
#   - a level-2 request (4 CPUs) is not granted across the two types: it
#     gets the fast pair; with --mix-core-types it gets all four;
#   - while fused, the representative's performance target is full and the
#     lent CPU's none (scx_bpf_cpuperf_set);
#   - untagged single-threaded tasks run on the fast core while it is free,
#     also ones that never sleep (/proc/stat idle and their schedstat over
#     one monotonic window);
#   - bad capacities are refused with the field named.
. /opt/chameleon/guest/lib.sh
TEST=hybrid

[ "$(nproc)" = 4 ] || fail "needs 4 CPUs, has $(nproc)"
make_cgroup seq

# Refused before anything loads.
for bad in "0-1=0" "0-9=512" "0-1=512;1=256" "fast"; do
	out=$(scx_chameleon --cpu-capacity "$bad" 2>&1) && fail "--cpu-capacity $bad accepted"
	echo "$out" | grep -q -- "--cpu-capacity" || fail "--cpu-capacity $bad: unclear error: $out"
	ok "refused: --cpu-capacity $bad -> $(echo "$out" | tail -n 1)"
done
[ "$(state)" = disabled ] || fail "a refused start left sched_ext '$(state)'"

start_agent --events --cpu-capacity "0-1=512;2-3=1024"
grep -q "nodes: \[\[2, 3\], \[0, 1\]\]" "$AGENT_LOG" || fail "nodes not split by capacity: $(grep nodes: "$AGENT_LOG")"
ok "nodes fastest first: $(grep -o 'nodes: .*' "$AGENT_LOG")"
scx_chameleon tag seq --level 1 >/dev/null || fail "tag seq"
spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
a=$!
wait_object $a "2, 3" "level 1"
# Where the kernel runs it, and CPUs 2-3's idle time and the task's CPU time
# over one monotonic window (cpu_share, meanwhile). One sampling process
# (task_cpu), not a fork per sample (pinned_object).
task_cpu $a 2 20 100 >/tmp/task_cpu.out &
tc=$!
shares r 1800 cpu2 cpu3 $a
wait $tc || fail "task_cpu $a"
set -- $r $(cat /tmp/task_cpu.out)
idle2=$1 idle3=$2 apm=$3 on2=$4 n=$5
ok "level 1: object [2, 3]; the kernel had it on CPU 2 in $on2 of $n samples; CPUs 2 / 3 idle $idle2 / $idle3 ‰, the task ran $apm ‰"
[ "$on2" -ge 18 ] || fail "the task ran on CPU 2 in only $on2 of $n samples"
# Nothing else runs on the fast pair: its idle and the task's time add up to
# the pair (per mille of 2 CPUs).
accounts_for "level 1: CPUs 2-3" $(( (idle2 + idle3) / 2 )) $(( apm / 2 ))
[ "$idle3" -ge 800 ] || fail "CPU 3 idle only $idle3 ‰ while lent"
# Performance targets handed to the kernel (scx_bpf_cpuperf_set; the guest
# has no cpufreq driver to act on them, so the policy's record is read):
# full on the fused representative, none on the CPU lent to it.
perf() {
	scx_chameleon status --json | tr ',' '\n' | grep -E '"cpu"|"perf"' | paste - - |
		sed -n "s/.*\"cpu\": *$1[^0-9].*\"perf\": *\([0-9null]*\).*/\1/p"
}
p2=$(perf 2) p3=$(perf 3)
ok "performance targets: CPU 2 (representative) $p2, CPU 3 (lent) $p3 of 1024"
[ "$p2" = 1024 ] && [ "$p3" = 0 ] || fail "targets $p2 / $p3, want 1024 / 0"

scx_chameleon tag seq --level 2 >/dev/null || fail "retag seq level 2"
end_tasks $a
spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
a=$!
wait_object $a "2, 3" "level 2, types apart"
sleep 1
[ "$(object $a)" = "2, 3" ] || fail "level 2: object became [$(object $a)]"
ok "level 2: the fast pair [2, 3], not 4 CPUs across both types"
end_tasks $a

# Untagged single-threaded load goes to the fast core too: two spinners
# started on the slow CPUs 0 and 1, then allowed everywhere, run on 2-3
# (/proc/stat: the slow CPUs idle, the fast ones busy) although neither
# ever sleeps (the tick moves them, bpf/fast.bpf.c).
spin -c 0 $LONG >/dev/null &
u0=$!
spin -c 1 $LONG >/dev/null &
u1=$!
usleep 200000
taskset -p f $u0 >/dev/null && taskset -p f $u1 >/dev/null || fail "taskset -p f"
sleep 1
shares r 3000 cpu0 cpu1 cpu2 cpu3 $u0 $u1
set -- $r
i0=$1 i1=$2 i2=$3 i3=$4
ok "untagged spinners started on CPUs 0-1: CPUs 0-3 idle $i0 $i1 $i2 $i3 ‰ of 3 s; the spinners ran $5 ‰ and $6 ‰; now on CPUs $(awk '{ print $39 }' /proc/$u0/stat) and $(awk '{ print $39 }' /proc/$u1/stat)"
# The two spinners are all that runs: the four CPUs' idle and their time
# add up to the four CPUs (per mille of 4 CPUs).
accounts_for "untagged: CPUs 0-3" $(( (i0 + i1 + i2 + i3) / 4 )) $(( ($5 + $6) / 4 ))
[ "$i0" -ge 800 ] && [ "$i1" -ge 800 ] || fail "untagged load left on the slow CPUs (idle $i0 ‰, $i1 ‰)"
[ "$i2" -le 200 ] && [ "$i3" -le 200 ] || fail "the fast CPUs idled (idle $i2 ‰, $i3 ‰)"
end_tasks $u0 $u1
stop_agent

start_agent --events --cpu-capacity "0-1=512;2-3=1024" --mix-core-types
spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
a=$!
wait_object $a "0, 1, 2, 3" "level 2, --mix-core-types"
ok "--mix-core-types: level 2 gets [0, 1, 2, 3]"
end_tasks $a
stop_agent
pass
