#!/bin/sh
# SMT class kwork, the bi-modal SMT scheduler's AMP mode: a tagged task's
# core is its own, its user work on the representative and its kernel work
# on the sibling. With chameleon_proxy loaded, checked from the kernel's side:
#   - a device IRQ bound to the representative (ttyS0, IRQ 4: every printed
#     line interrupts) moves to the sibling while the object lives: its
#     count on the representative stops growing, on the sibling it grows
#     (/proc/interrupts), and its affinity comes back after the untag;
#   - the task itself stays on the representative (/proc/PID/stat), which
#     it keeps (schedstat: >= 90 % of the window).
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
t0=$(now_ms)
until scx_chameleon status | grep -q "^pid $a: .*-> \[0, 1\]$"; do
	[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "no object [0, 1]: $(scx_chameleon status | grep '^pid')"
	usleep 100000
done
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
# The policy's programs hold the module until an RCU grace period after the exit.
t0=$(now_ms)
until rmmod chameleon_proxy 2>/dev/null; do
	[ $(( $(now_ms) - t0 )) -lt 10000 ] || fail "rmmod refused 10 s after the agent exited"
	usleep 100000
done
pass
