#!/bin/sh
# The demo (make demo): what tagging buys, on an emulated dynamic processor.
#
# chameleon_proxy's duty-cycle emulation (kmod_proxy/emulate.c, --emulate
# high: Chameleon's Table 2) makes every CPU idle by idle injection half of
# each 10 ms period, and the representative CPU of a fused object only a
# quarter of it: a task fused at level 1 (2 CPUs) runs 75 % of the time where
# a native one runs 50 %, 1.5x as much (tests/vm/guest/emulate.sh asserts
# those shares from schedstat).
#
# Phase 1: the same spinner twice, side by side for one window: in cgroup seq,
# tagged for a level-1 object, and in cgroup twin, untagged. The headline is
# the ratio of their work (the spinner's own loop counter, read at both ends
# of the window with SIGUSR1), cross-checked with the ratio of the CPU time
# the kernel accounted to them (/proc/PID/schedstat) over the same window.
# Both are ratios of two tasks in one boot: TCG's speed varies from run to
# run and no absolute time means anything here. The work counts compare only
# where every vCPU has its own host thread (scripts/demo.sh boots with
# --mttcg: why there).
# Phase 2: a parallel load in cgroup par next to a new tagged task, and a CPU
# offlined and onlined, for the scheduler's events.
#
# 4 CPUs, 2 cores of 2 threads (tests/vm/run's default): the object {0, 1},
# the twin pinned to CPU 2, everything else (this shell, the agent, kernel
# threads that may move, device interrupts) on CPU 3, so that nothing but the
# two spinners wakes up on their CPUs (as in emulate.sh: a wakeup on the
# representative takes it from its owner and splits the object).
. /opt/chameleon/guest/lib.sh
TEST=demo
WINDOW=6

# rule TEXT: the line to read first, framed.
rule() {
	echo "========================================================================"
	echo "  $*"
	echo "========================================================================"
}
# spin_mark FILE N: the loop count of the N-th "mark" line in FILE (empty if none yet).
spin_mark() { sed -n "s/^spin pid=[0-9]* mark loops=\([0-9]*\)$/\1/p" "$1" | sed -n "${2}p"; }
# schedstat PID: the task's CPU time so far, ns (the kernel's accounting);
# read by the shell, no process started.
schedstat() {
	_ss=
	read -r _ss _rest 2>/dev/null <"/proc/$1/schedstat"
	echo "$_ss"
}
# names: cgroup ids in the agent's lines -> cgroup names.
names() {
	sed -E -e "s/cgroup=$seq_id( |$)/cgroup=seq\1/" -e "s/cgroup=$twin_id( |$)/cgroup=twin\1/" \
		-e "s/cgroup=$par_id( |$)/cgroup=par\1/" -e "s/cgroup=1( |$)/cgroup=root\1/"
}

echo "== kernel $(uname -r), $(nproc) CPUs, cores (SMT pairs): $(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list) and $(cat /sys/devices/system/cpu/cpu2/topology/thread_siblings_list)"
[ "$(nproc)" = 4 ] && [ "$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)" = 0-1 ] ||
	fail "the demo wants 4 CPUs in 2 cores {0, 1} and {2, 3} (tests/vm/run's default)"

# Housekeeping on CPU 3 (see above).
house=0x8
taskset -p $house $$ >/dev/null || fail "cannot pin the demo shell to CPU 3"
echo 8 >/sys/devices/virtual/workqueue/cpumask || fail "cannot move unbound workqueues to CPU 3"
for d in /proc/[0-9]*; do taskset -p $house "${d#/proc/}" >/dev/null 2>&1; done
for d in /proc/irq/[0-9]*; do echo 3 >"$d/smp_affinity_list" 2>/dev/null; done

make_cgroup seq
make_cgroup twin
make_cgroup par
seq_id=$(stat -c %i /sys/fs/cgroup/seq) twin_id=$(stat -c %i /sys/fs/cgroup/twin) par_id=$(stat -c %i /sys/fs/cgroup/par)
insmod /opt/chameleon/chameleon_proxy.ko || fail "insmod chameleon_proxy failed"
start_agent --events --stats 2 --emulate high --tag seq=level:1,tax:1
grep -q "processor proxies on" "$AGENT_LOG" || fail "the policy did not bind the module's kfuncs"
emul=$(scx_chameleon status | grep '^module: emulate=')
[ -n "$emul" ] || fail "the emulation is not on (scx_chameleon status has no 'module: emulate=' line)"
echo "== emulated dynamic processor on (${emul#module: }: each CPU's duty cycle, per mille)"
echo "   how: the module idles every CPU (idle injection) half of each 10 ms period, a fused object's"
echo "   representative only a quarter of it: fused, a task runs 75 % of the time, native 50 % (1.5x)"

echo "== phase 1: the same spinner in cgroup seq (tagged, level 1, on core {0, 1}) and in cgroup twin (untagged, on CPU 2)"
spin -c 2 -g /sys/fs/cgroup/twin $LONG >/tmp/twin.out &
twin=$!
taskset 0x3 spin -g /sys/fs/cgroup/seq $LONG >/tmp/seq.out &
seq=$!
wait_log "^event  *fuse .*pid=$seq .*cpus=[0-9]*,[0-9]* " 20000 "the tagged task (pid $seq) never fused its level-1 object"
cpus=$(sed -n "s/^event  *fuse .*pid=$seq .*cpus=\([0-9,]*\) .*/\1/p" "$AGENT_LOG" | head -n 1)
case ",$cpus," in *,2,* | *,3,*) fail "seq's object is {$cpus}: it should leave the twin's core {2, 3} alone" ;; esac
nap 2
duty=$(scx_chameleon status | sed -n 's/^module: emulate=.* duty_pm=//p')
echo "   seq fused its object {$cpus}; duty cycles now $duty; after 2 s to settle, a ${WINDOW} s window"

# The window: marks and schedstat at both ends (SIGUSR1: each spinner prints its loop count).
s0=$(schedstat $seq) t0=$(schedstat $twin)
kill -USR1 $seq $twin
nap $WINDOW
s1=$(schedstat $seq) t1=$(schedstat $twin)
kill -USR1 $seq $twin
still_running $seq $twin
until_ok 5000 "the spinners did not print their second marks" \
	sh -c "[ \$(grep -c mark /tmp/seq.out) -ge 2 ] && [ \$(grep -c mark /tmp/twin.out) -ge 2 ]"
end_tasks $seq $twin
ls0=$(spin_mark /tmp/seq.out 1) ls1=$(spin_mark /tmp/seq.out 2)
lt0=$(spin_mark /tmp/twin.out 1) lt1=$(spin_mark /tmp/twin.out 2)
for v in "$s0" "$s1" "$t0" "$t1" "$ls0" "$ls1" "$lt0" "$lt1"; do
	case $v in "" | *[!0-9]*) fail "a reading is missing or not a number (schedstat seq $s0 $s1, twin $t0 $t1; loops seq $ls0 $ls1, twin $lt0 $lt1)" ;; esac
done
ws=$((ls1 - ls0)) wt=$((lt1 - lt0)) rs=$(((s1 - s0) / 1000000)) rt=$(((t1 - t0) / 1000000))
[ "$wt" -gt 0 ] && [ "$rt" -gt 0 ] && [ "$ws" -gt 0 ] && [ "$rs" -gt 0 ] ||
	fail "no ratio: in the window seq did $ws loops in $rs ms of CPU, twin $wt loops in $rt ms"
work_x=$(awk -v a=$ws -v b=$wt 'BEGIN { printf "%.2f", a / b }')
time_x=$(awk -v a=$rs -v b=$rt 'BEGIN { printf "%.2f", a / b }')
wait_log "^event  *task_exit .*pid=$seq " 5000 "no task_exit event for seq (pid $seq)"
fused=$(fused_pct $seq)
[ "$fused" -ge 0 ] || fail "no fused time in seq's task_exit event"
HEADLINE="seq: ${work_x}x its untagged twin's work, fused $fused % of its run time (CPU time ${time_x}x, schedstat)"
echo
rule "$HEADLINE"
echo "   in the same ${WINDOW} s: seq $ws spinner loops in $rs ms of CPU (schedstat), twin $wt loops in $rt ms"
# The checks: the CPU time ratio is what the emulation promises (1.5x;
# emulate.sh holds its shares to 75 +- 5 % and 50 +- 5 %: 1.27-1.78x); the
# work ratio is the CPU time ratio if a loop costs both the same CPU time.
# It does on an idle host (loops per ms of CPU within 2 %); but a vCPU runs
# as fast as the host lets it, and a host busy with other work serves first
# the vCPU that sleeps more, the twin's: with the host's load average at 2-4
# on 2 cores a loop cost seq 12-27 % more CPU time than the twin (work ratio
# 1.11-1.31x for CPU time ratios of 1.48-1.52x). The work must still be
# more than 1.05x, and seq's loops per ms of CPU 0.6-1.3x the twin's.
# The guest cannot see the host's load: a note says what a gap means.
rate=$(awk -v ws=$ws -v rs=$rs -v wt=$wt -v rt=$rt 'BEGIN { printf "%.2f", (ws / rs) / (wt / rt) }')
echo "   a loop's CPU time: seq did $(awk -v w=$ws -v r=$rs 'BEGIN { printf "%.2f", w / r }'), twin $(awk -v w=$wt -v r=$rt 'BEGIN { printf "%.2f", w / r }') loops per ms of CPU (ratio $rate): the extra work is the extra CPU time"
awk -v x=$rate 'BEGIN { exit !(x < 0.9) }' &&
	echo "   (seq's loops cost it more CPU time: its vCPU, the busier, got less of a busy host; on an idle one the two ratios agree)"
awk -v t=$time_x 'BEGIN { exit !(t >= 1.25 && t <= 1.8) }' ||
	fail "seq got ${time_x}x the twin's CPU time (schedstat; want 1.25-1.8x: the emulation gives a fused task 75 % of a CPU, a native one 50 %)"
awk -v x=$rate 'BEGIN { exit !(x >= 0.6 && x <= 1.3) }' ||
	fail "work and CPU time disagree: seq did ${work_x}x the twin's work with ${time_x}x its CPU time (loops per ms of CPU: ratio $rate, want 0.6-1.3; a host busy with other work slows seq's vCPU, the busier, more: run the demo on a quieter host)"
awk -v w=$work_x 'BEGIN { exit !(w > 1.05) }' ||
	fail "no gain in work: seq did ${work_x}x the twin's work with ${time_x}x its CPU time (want more than 1.05x; loops per ms of CPU: ratio $rate: a host busy with other work slows seq's vCPU, the busier, more)"
[ "$fused" -ge 60 ] || fail "seq was fused only $fused % of its run time (want 60 % or more)"
echo

echo "== phase 2 (4 s): a new task in seq next to a parallel load in par (stress-ng), and cpu2 offlined and onlined"
taskset -p 0xf $$ >/dev/null
spin -g /sys/fs/cgroup/seq 5 >/dev/null &
seq2=$!
sh -c 'echo $$ >/sys/fs/cgroup/par/cgroup.procs; exec stress-ng --cpu 2 --pipe 1 --timeout 4 -q' &
par=$!
nap 1
echo 0 >/sys/devices/system/cpu/cpu2/online || fail "cannot offline cpu2"
nap 1
echo 1 >/sys/devices/system/cpu/cpu2/online || fail "cannot online cpu2"
wait $seq2 $par
stop_agent

echo
echo "== events from the scheduler (ring buffer), by kind:"
grep '^event ' "$AGENT_LOG" | awk '{ n[$2]++ } END { for (k in n) printf "   %-13s %d\n", k, n[k] }' | sort
echo "== splits of objects, by reason:"
grep -E '^event +split ' "$AGENT_LOG" | sed 's/.*reason=\([a-z_]*\).*/\1/' | sort | uniq -c | sed 's/^ */   /'
echo "== seq in phase 1 (pid $seq): its object, first fuse, exit"
grep -E "DEBUG (assign|unassign) pid=$seq " "$AGENT_LOG" | sed 's/.*DEBUG /   /'
grep -E "^event  *fuse .*pid=$seq " "$AGENT_LOG" | head -n 1 | names | sed 's/^event */   /'
grep -E "^event  *task_exit .*pid=$seq " "$AGENT_LOG" | names | sed 's/^event */   /'
echo "== CPU hotplug events:"
grep -E "^event  *cpu_o" "$AGENT_LOG" | sed 's/^event */   /'
echo "== counters every 2 s:"
grep '^stats ' "$AGENT_LOG" | sed 's/^/   /'
echo "== $(grep '^summary ' "$AGENT_LOG")"
echo "== $(grep 'EXIT' "$AGENT_LOG")"
echo "== sched_ext state after: $(state)"
echo
rule "$HEADLINE"
