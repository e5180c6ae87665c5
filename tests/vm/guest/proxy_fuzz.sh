#!/bin/sh
# chameleon_proxy's ioctls fuzzed (module only, 4 CPUs): `proxy_ctl fuzz` sends
# random commands, sizes (struct versions), flags, reserved words, pointers and
# cpumasks (none, all, offline, not present, bits past nr_cpu_ids) and judges
# each answer against chameleon_proxy.h: a request with a fault must get one of
# its faults' errnos, a valid one may fail only for the module's state. Meanwhile
# a loop takes CPUs 1-3 offline and online through sysfs; between rounds the
# module is removed and inserted again, and one round's fuzzer is killed (-9)
# mid-run (its release undoes whatever it parked), and in another a session
# owns the module, so the fuzzer's valid changes must get EACCES. At the end the online CPUs
# and every IRQ's affinity are as they began; the VM runner fails the test on
# any WARN, BUG or oops in the kernel log.
. /opt/chameleon/guest/lib.sh

rounds=${1:-6} calls=${2:-2500}
ko=/opt/chameleon/chameleon_proxy.ko
insmod "$ko" || fail "insmod failed"
affinities() {
	for d in /proc/irq/[0-9]*; do
		[ -f "$d/smp_affinity_list" ] && echo "${d#/proc/irq/} $(cat "$d/smp_affinity_list")"
	done
}
online0=$(online) aff0=$(affinities)
ok "before: online $online0, $(echo "$aff0" | wc -l) IRQs"

# The hotplug loop, until /tmp/fuzz.stop exists (its fds closed: see lib.sh).
rm -f /tmp/fuzz.stop
(
	n=0
	while [ ! -e /tmp/fuzz.stop ]; do
		c=$((n % 3 + 1))
		echo 0 >"/sys/devices/system/cpu/cpu$c/online" 2>/dev/null
		usleep $(( (n * 7919) % 150000 + 20000 ))
		echo 1 >"/sys/devices/system/cpu/cpu$c/online" 2>/dev/null
		n=$((n + 1))
	done
	echo "$n" >/tmp/fuzz.hotplugs
) 3>&- 4<&- &
hp=$!

total=0 wrong=0 r=0
: >/tmp/fuzz.tally
while [ $r -lt "$rounds" ]; do
	seed=$((1000 + r))
	if [ $r -eq 2 ]; then
		# Killed mid-run: its release must undo what it had made.
		proxy_ctl fuzz 100000 "$seed" >/tmp/fuzz.out 2>&1 &
		f=$!
		usleep 700000
		kill -9 "$f" 2>/dev/null
		wait "$f" 2>/dev/null
		ok "round $r (seed $seed): fuzzer killed -9 after 0.7 s"
	else
		# One round while a session owns the module: every valid change
		# from the fuzzer must get EACCES.
		[ $r -eq 4 ] && { pc_open; pc claim >/dev/null || fail "round $r: claim"; }
		proxy_ctl fuzz "$calls" "$seed" >/tmp/fuzz.out 2>&1 ||
			{ cat /tmp/fuzz.out; fail "round $r (seed $seed): proxy_ctl fuzz failed"; }
		w=$(sed -n 's/^wrong=//p' /tmp/fuzz.out)
		[ "$w" = 0 ] || { grep '^wrong' /tmp/fuzz.out; fail "round $r (seed $seed): $w wrong answers"; }
		total=$((total + calls))
		grep -E '^(must_fail_by|valid_by)' /tmp/fuzz.out >>/tmp/fuzz.tally
		ok "round $r (seed $seed): $(grep -E '^(must_fail|valid)=' /tmp/fuzz.out | tr '\n' ' ')"
		[ $r -eq 4 ] && { pc_close || fail "round $r: session exit"; }
	fi
	if [ $((r % 2)) -eq 1 ]; then
		rmmod chameleon_proxy || fail "round $r: rmmod right after the fuzzer exited"
		insmod "$ko" || fail "round $r: insmod"
		ok "round $r: module reloaded"
	fi
	r=$((r + 1))
done
touch /tmp/fuzz.stop
wait "$hp"
for c in 1 2 3; do echo 1 >"/sys/devices/system/cpu/cpu$c/online" 2>/dev/null; done
wait_online "$online0"

# Every errno each kind of request got, over all rounds.
awk '{ for (i = 2; i <= NF; i++) { split($i, kv, "="); n[$1 " " kv[1]] += kv[2] } }
	END { for (k in n) print "   " k "=" n[k] }' /tmp/fuzz.tally | sort
sleep 2
[ "$(online)" = "$online0" ] || fail "online $(online) at the end, was $online0"
aff1=$(affinities)
[ "$aff1" = "$aff0" ] || { echo "$aff0" >/tmp/a0; echo "$aff1" >/tmp/a1; diff /tmp/a0 /tmp/a1; fail "IRQ affinities changed"; }
[ "$(stat_of owner_pid)" = 0 ] && [ "$(stat_of emulate_on)" = 0 ] ||
	fail "module state at the end: owner_pid=$(stat_of owner_pid) emulate_on=$(stat_of emulate_on)"
proxy_ctl stats | grep '^cpu=' | grep -q 'parked=1' && fail "a CPU still parked at the end"
rmmod chameleon_proxy || fail "final rmmod"
ok "$total judged requests in $((rounds - 1)) rounds, $(cat /tmp/fuzz.hotplugs) sysfs offline/online pairs, module reloaded $((rounds / 2)) times; online $(online), IRQ affinities as before"
pass
