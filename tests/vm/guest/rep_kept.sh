#!/bin/sh
# A fused representative stays its owner's under a movable load (Chameleon
# Fig. 7's situation: a parallel program whose threads may run anywhere).
# One tagged level-1 task (object {0,1}, tax 0.01) and four untagged
# spinners allowed on every CPU: five CPU-bound tasks on four CPUs. The
# spinners that the object displaces must run elsewhere, not on the
# representative: there each one's vtime turn ends the object (split
# reason "preempt") and the owner shares its own CPU. Measured from the
# kernel's accounting (schedstat), as ratios of CPU times in one window:
# the owner runs at least 1.75x the spinners' average (it has CPU 0; they
# share the other three, less the lent one: 2.0-2.1x in 2 runs, 1.36-1.63x
# before the representative was kept, with 182-194 preempt splits), and
# every spinner still runs
# (at least a tenth of the owner's time). Plus our own count of preempt
# splits in the window, which the kernel cannot see, and of lending-bound
# splits: a spinner displaced onto the lent CPU 1 that reaches the bound
# may run elsewhere, so the guard moves it there and the object stays
# (a bound split is for a waiter that can run on the lent CPU only). The
# guard once checked the representative's bound before it had moved the
# lent CPU's waiters (CPU 0 before CPU 1 in one pass): 24-39 bound splits
# per run of Fig. 7's tax 0.01, the sequential task fused 68-89 % of its
# run instead of 95 %.
. /opt/chameleon/guest/lib.sh
TEST=rep_kept
count_split() { grep -cE "^event +split .*reason=$1" "$AGENT_LOG"; }

make_cgroup seq
start_agent --events --tag seq=level:1,tax:0.01
spinners_then_seq 4
wait_log "untagged load=[4-9]" 10000 "the agent never saw the 4 spinners as untagged load"
sleep 1
grep -q "DEBUG assign pid=$a cpus=\[0, 1\]" "$AGENT_LOG" || fail "no object for the sequential task"
s0=$(count_split preempt) b0=$(count_split bound)
a0=$(run_ns $a) q0=$(run_ns $p0) q1=$(run_ns $p1) q2=$(run_ns $p2) q3=$(run_ns $p3)
sleep 6
a1=$(run_ns $a) r0=$(run_ns $p0) r1=$(run_ns $p1) r2=$(run_ns $p2) r3=$(run_ns $p3)
s1=$(count_split preempt) b1=$(count_split bound)
ams=$(( (a1 - a0) / 1000000 ))
m0=$(( (r0 - q0) / 1000000 )) m1=$(( (r1 - q1) / 1000000 ))
m2=$(( (r2 - q2) / 1000000 )) m3=$(( (r3 - q3) / 1000000 ))
avg=$(( (m0 + m1 + m2 + m3) / 4 ))
min=$m0
for m in $m1 $m2 $m3; do [ "$m" -lt "$min" ] && min=$m; done
pre=$((s1 - s0)) bnd=$((b1 - b0))
ok "in 6 s: owner ran $ams ms, spinners $m0 / $m1 / $m2 / $m3 ms (schedstat); $pre preempt splits, $bnd bound splits"
[ "$(state)" = enabled ] || fail "scheduler ejected"
[ $(( min * 10 )) -ge "$ams" ] || fail "a spinner got $min ms, under a tenth of the owner's $ams ms"
[ $(( ams * 100 )) -ge $(( avg * 175 )) ] ||
	fail "the owner ran $ams ms, under 1.75x the spinners' average $avg ms: it shares its representative"
[ "$pre" -le 10 ] || fail "$pre preempt splits in 6 s (> 10): others took the representative"
[ "$bnd" -le 1 ] || fail "$bnd lending-bound splits in 6 s (> 1): movable waiters on the lent CPU were not moved first"
end_tasks $a $p0 $p1 $p2 $p3
stop_agent
pass
