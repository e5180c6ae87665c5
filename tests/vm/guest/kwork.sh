#!/bin/sh
# SMT class kwork, the bi-modal SMT scheduler's AMP mode: a tagged task's
# core is its own, its user work on the representative and its kernel work
# on the sibling. With chameleon_proxy loaded, checked from the kernel's side:
#   - a device IRQ bound to the representative (ttyS0, IRQ 4: every printed
#     line interrupts) moves to the sibling while the object lives: its
#     count on the representative stops growing, on the sibling it grows
#     (/proc/interrupts), and its affinity comes back after the untag;
#   - the task itself stays on the representative (/proc/PID/stat), which
#     it keeps (schedstat: >= 90 % of the window);
#   - movable kthreads (rcu_preempt, the console's printer, kcompactd...)
#     run on the sibling, not on the representative, with CPUs 2-3 busy so
#     that the sibling is where they go or nowhere (the kernel's
#     sched_switch events); and they run there undisturbed: their
#     involuntary context switches (/proc/PID/status) stay few. The same
#     window with the class `uni` is the reference: there the sibling idles
#     and the kthreads run on neither CPU of the object (CPUs 2-3).
. /opt/chameleon/guest/lib.sh
TEST=kwork

ko=/opt/chameleon/chameleon_proxy.ko
insmod "$ko" || fail "insmod failed"
irq=4
irq_on() { awk -v i="$irq:" -v c=$(( $1 + 2 )) '$1 == i { print $c }' /proc/interrupts; }
echo 0 >/proc/irq/$irq/smp_affinity_list || fail "cannot bind IRQ $irq to CPU 0"
echo "   IRQ $irq: affinity 0 requested"
usleep 200000
[ "$(cat /proc/irq/$irq/effective_affinity_list)" = 0 ] || fail "IRQ $irq not on CPU 0"

make_cgroup k
start_agent --events
grep -q "processor proxies on" "$AGENT_LOG" || fail "the policy did not bind the module's kfuncs"
scx_chameleon tag k --smt kwork >/dev/null || fail "tag k --smt kwork"
spin -g /sys/fs/cgroup/k $LONG >/dev/null &
a=$!
wait_object $a "0, 1" "kwork"
# An IO-APIC IRQ takes its new affinity at its next interrupt: print until
# it is in effect.
until [ "$(cat /proc/irq/$irq/effective_affinity_list)" = 1 ]; do
	echo "   waiting for IRQ $irq to move (affinity $(cat /proc/irq/$irq/smp_affinity_list), in effect $(cat /proc/irq/$irq/effective_affinity_list))"
	[ $(( $(now_ms) - t0 )) -lt 10000 ] || fail "IRQ $irq not moved to the sibling: $(cat /proc/irq/$irq/smp_affinity_list)"
	usleep 100000
done
ok "object [0, 1]: IRQ $irq moved from the representative to the sibling"
# Interrupts while the object lives: 50 console lines. A window in which
# the object ended (split: a higher class took the representative, say)
# measures something else: reported and measured again, up to 3 times.
try=0
while :; do
	try=$(( try + 1 ))
	until [ "$(cat /proc/irq/$irq/effective_affinity_list)" = 1 ]; do
		echo "   waiting for IRQ $irq to be on CPU 1 again"
		usleep 100000
	done
	c0=$(irq_on 0) c1=$(irq_on 1) r0=$(run_ns $a) w0=$(now_ms) on0=0 s0=$(count_events split)
	for i in $(seq 50); do
		echo "   kwork: console line $i"
		[ "$(awk '{ print $39 }' /proc/$a/stat)" = 0 ] && on0=$(( on0 + 1 ))
		usleep 20000
	done
	d0=$(( $(irq_on 0) - c0 )) d1=$(( $(irq_on 1) - c1 ))
	ran=$(( ($(run_ns $a) - r0) / 10000 / ($(now_ms) - w0) ))
	ns=$(( $(count_events split) - s0 ))
	[ "$ns" -gt 0 ] || break
	echo "   window $try: the object split $ns times: $(grep -E "^event +split " "$AGENT_LOG" | tail -n $ns | tr '\n' '|')"
	[ "$try" -lt 3 ] || fail "the object split in each of 3 windows"
done
ok "50 lines: IRQ $irq taken $d0 times by CPU 0 (user work), $d1 by CPU 1 (kernel work); the task on CPU 0 in $on0 of 50 samples, ran $ran % (schedstat)"
[ "$d0" -eq 0 ] || fail "the representative still took IRQ $irq ($d0 times)"
[ "$d1" -gt 0 ] || fail "the sibling took no IRQ $irq"
[ "$on0" -ge 45 ] || fail "the task ran elsewhere than CPU 0 ($on0 of 50 samples on it)"
[ "$ran" -ge 90 ] || fail "the task ran only $ran % of the window"

# --- Movable kthreads: on the sibling, and left to run there ---
T=/sys/kernel/tracing
[ -f $T/events/sched/sched_switch/enable ] || fail "no sched_switch tracepoint in $T"
# Room for every switch of the window on each CPU (checked: no overrun).
echo 16384 >$T/buffer_size_kb || fail "cannot size the trace buffer"
# movable_kthreads: "PID VOLUNTARY INVOLUNTARY" of each kthread allowed on
# more than one CPU.
movable_kthreads() {
	awk 'FNR == 1 { k = 0; m = 0 }
	     /^Pid:/ { pid = $2 }
	     /^Kthread:/ { k = $2 }
	     /^Cpus_allowed_list:/ { m = ($2 ~ /[-,]/) }
	     /^voluntary_ctxt_switches:/ { v = $2 }
	     /^nonvoluntary_ctxt_switches:/ { if (k == 1 && m) print pid, v, $2 }' \
		/proc/[0-9]*/status 2>/dev/null
}
# kthread_window CLASS: 50 console lines and kernel log lines (work for
# the console's printer kthread; RCU and the rest come as they do), with
# sched_switch traced. Sets on0/on1 (switches to movable kthreads on CPUs
# 0 and 1), vol/invol (their voluntary and involuntary context switches)
# and kt (the busiest ones, for the log).
kthread_window() {
	cls=$1
	movable_kthreads >/tmp/kt0
	echo >$T/trace
	echo 1 >$T/events/sched/sched_switch/enable
	s0=$(count_events split)
	for i in $(seq 50); do
		echo "   kwork: $1: console line $i"
		echo "kwork: $1: kernel log line $i" >/dev/kmsg
		usleep 50000
	done
	echo 0 >$T/events/sched/sched_switch/enable
	movable_kthreads >/tmp/kt1
	for c in 0 1 2 3; do
		o=$(sed -n 's/^overrun: //p' $T/per_cpu/cpu$c/stats)
		[ "$o" = 0 ] || fail "$1: the trace lost $o events on CPU $c"
	done
	ns=$(( $(count_events split) - s0 ))
	why=$(grep -E "^event +split " "$AGENT_LOG" | tail -n "$ns" | sed -n 's/.* reason=\([a-z]*\).*/\1/p' | sort | uniq -c | tr -s ' \n' '  ')
	sed -n 's/.*\[00\([0-3]\)\].* sched_switch: .* next_comm=\(.*\) next_pid=\([0-9]*\) .*/\1 \3 \2/p' \
		$T/trace >/tmp/sw
	set -- $(awk 'NR == FNR { mov[$1] = 1; next }
		      ($2 in mov) { n[$1]++ }
		      END { print n[0] + 0, n[1] + 0 }' /tmp/kt1 /tmp/sw)
	on0=$1 on1=$2
	kt=$(awk 'NR == FNR { mov[$1] = 1; next }
		  ($2 in mov) { by[$3 "@" $1]++ }
		  END { for (k in by) if (by[k] >= 20) printf "%s %d, ", k, by[k] }' /tmp/kt1 /tmp/sw)
	set -- $(awk 'NR == FNR { v[$1] = $2; iv[$1] = $3; next }
		      ($1 in v) { dv += $2 - v[$1]; di += $3 - iv[$1] }
		      END { print dv + 0, di + 0 }' /tmp/kt0 /tmp/kt1)
	vol=$1 invol=$2
	ok "$cls: movable kthreads switched in $on0 times on CPU 0, $on1 on CPU 1; $vol voluntary and $invol involuntary switches; splits $ns (${why:-none}); busiest: $kt"
}
spin -c 2 $LONG >/dev/null &
b2=$!
spin -c 3 $LONG >/dev/null &
b3=$!
sleep 1
kthread_window kwork
[ "$ns" = 0 ] || echo "   kwork: the object split $ns times in the window"
[ "$on1" -ge 50 ] || fail "kwork: movable kthreads ran only $on1 times on the sibling"
kw1=$on1
[ $(( on0 * 20 )) -le "$on1" ] || fail "kwork: movable kthreads ran $on0 times on the representative (sibling $on1)"
[ $(( invol * 10 )) -le $(( vol + 100 )) ] || fail "kwork: movable kthreads preempted $invol times ($vol voluntary switches)"
scx_chameleon tag k --smt uni >/dev/null || fail "tag k --smt uni"
sleep 1
scx_chameleon status | grep -q "^pid $a: .*-> \[0, 1\]$" || fail "uni: no object [0, 1]: $(scx_chameleon status | grep '^pid')"
kthread_window uni
# uni: a fused representative runs its owner and per-CPU kthreads only, its
# lent sibling per-CPU kthreads only (role.bpf.c), so movable kthreads run on
# CPUs 2-3: kwork is what put them on the sibling.
[ $(( (on0 + on1) * 20 )) -le "$kw1" ] ||
	fail "uni (the reference): movable kthreads ran $on0 times on the representative, $on1 on the sibling (kwork: $kw1 on the sibling)"
end_tasks $b2 $b3

scx_chameleon untag k >/dev/null || fail "untag k"
t0=$(now_ms)
until [ "$(cat /proc/irq/$irq/smp_affinity_list)" = 0 ]; do
	echo "   waiting for IRQ $irq to come back"
	[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "IRQ $irq not back on CPU 0: $(cat /proc/irq/$irq/smp_affinity_list)"
	usleep 100000
done
ok "untagged: IRQ $irq back on CPU 0"
end_tasks $a
[ "$(state)" = enabled ] || fail "scheduler ejected"
stop_agent
rmmod_proxy
pass
