#!/bin/sh
# The scheduler with chameleon_proxy loaded first, checked from the kernel's
# side (/proc/irq, /proc/stat, sysfs) as well as from `status`:
# - the policy binds the module's kfuncs: a fused object lends CPU 1 to CPU 0
#   through the module (proxies 1->0, also in the OpenMetrics metrics), and a
#   device IRQ whose affinity is CPU 1 moves to the representative while it
#   is lent, and back after;
# - park 2-3: the scheduler stops using them at once (idle in /proc/stat
#   over a monotonic window while 4 spinners run, their schedstat adding
#   up), unpark gives them back; park 3 with hold-off 0 takes it offline;
#   bad park requests are refused with a reason;
# - --emulate high: spinners on plain CPUs get about half of them (by
#   schedstat; the exact shares are the `emulate` test's), shown in status;
# - the agent's exit leaves nothing behind: CPUs online, emulation off, the
#   IRQ back, and the module can be removed.
. /opt/chameleon/guest/lib.sh

ko=/opt/chameleon/chameleon_proxy.ko
insmod "$ko" || fail "insmod failed"

# A device IRQ on CPU 1 (in effect: an IO-APIC IRQ moves at its next
# interrupt; ttyS0 takes one for every line printed).
irq=4
echo 1 >/proc/irq/$irq/smp_affinity_list || fail "cannot set IRQ $irq's affinity"
echo "   IRQ $irq: affinity 1 requested"
usleep 200000
[ "$(cat /proc/irq/$irq/effective_affinity_list)" = 1 ] || fail "IRQ $irq not on CPU 1: $(cat /proc/irq/$irq/effective_affinity_list)"

make_cgroup seq
start_agent --events
grep -q "processor proxies on" "$AGENT_LOG" || fail "the policy did not bind the module's kfuncs: $(grep chameleon_proxy "$AGENT_LOG")"
scx_chameleon tag seq --level 1 --tax 1 >/dev/null || fail "tag seq"
spin -g /sys/fs/cgroup/seq 60 >/dev/null &
a=$!
t0=$(now_ms)
until scx_chameleon status 2>/dev/null | grep -q "proxies=\[1->0\]"; do
	[ $(( $(now_ms) - t0 )) -lt 10000 ] || { scx_chameleon status; fail "CPU 1 never lent to 0 through the module"; }
	usleep 50000
done
until [ "$(cat /proc/irq/$irq/smp_affinity_list)" = 0 ]; do
	[ $(( $(now_ms) - t0 )) -lt 10000 ] || fail "IRQ $irq not moved to the representative: $(cat /proc/irq/$irq/smp_affinity_list)"
	usleep 50000
done
ok "fused on [0, 1]: module shows CPU 1 proxied by 0; IRQ $irq moved from 1 to 0"
# The same in OpenMetrics (refreshed each second).
t0=$(now_ms)
until scx_chameleon metrics 2>/dev/null | grep -q "^chameleon_proxy_lent_cpus 1$"; do
	[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "metrics lack chameleon_proxy_lent_cpus 1: $(scx_chameleon metrics 2>&1 | grep proxy_ | tr '\n' ' ')"
	usleep 200000
done
scx_chameleon metrics | grep -E "^chameleon_proxy_(module_loaded|kfuncs_bound|lends_total|lent_timers_total) " | tr '\n' ' ' | sed 's/^/   metrics: /'
echo
scx_chameleon metrics | grep -q "^chameleon_proxy_kfuncs_bound 1$" || fail "metrics: kfuncs not bound"
scx_chameleon status | grep "^module:" | sed 's/^/   /'
scx_chameleon untag seq >/dev/null || fail "untag seq"
t0=$(now_ms)
until [ "$(cat /proc/irq/$irq/smp_affinity_list)" = 1 ]; do
	[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "IRQ $irq not back on CPU 1 after the split: $(cat /proc/irq/$irq/smp_affinity_list)"
	usleep 50000
done
ok "untagged: split, IRQ $irq back on 1"
kill $a

# idles VAR WHAT: VAR = each CPU's idle ‰ of the next 2 s of the monotonic
# clock (/proc/stat idle), "i0 i1 i2 i3", once the CPUs' idle and the 4
# spinners' CPU time (schedstat) add up to the 4 CPUs (nothing else runs;
# per mille of 4 CPUs).
idles() {
	_v=$1 _w=$2
	shares _r 2000 cpu0 cpu1 cpu2 cpu3 $spins
	set -- $_r
	ok "$_w: idle ‰ per CPU $1 $2 $3 $4; the 4 spinners ran $5 $6 $7 $8 ‰"
	accounts_for "$_w: CPUs 0-3" $(( ($1 + $2 + $3 + $4) / 4 )) $(( ($5 + $6 + $7 + $8) / 4 ))
	eval "$_v=\"$1 $2 $3 $4\""
}
spins=
for i in 1 2 3 4; do spin 120 >/dev/null & spins="$spins $!"; done
sleep 1
out=$(scx_chameleon park 2-3 --holdoff-ms 60000) || fail "park 2-3: $out"
echo "$out" | grep -q "^parked 2-3 in [0-9]* us (policy [0-9]* us, module [0-9]* us)" || fail "park 2-3: $out"
scx_chameleon status | grep -q "^parked: 2-3$" || fail "status lacks parked 2-3"
sleep 0.5
ok "$out"
idles r "4 spinners, CPUs 2-3 parked"
set -- $r
[ "$3" -ge 800 ] && [ "$4" -ge 800 ] || fail "parked CPUs 2-3 still used: idle $3 ‰ / $4 ‰"
[ "$1" -le 200 ] && [ "$2" -le 200 ] || fail "CPUs 0-1 idle $1 ‰ / $2 ‰ with 4 spinners"
out=$(scx_chameleon unpark 2-3) || fail "unpark 2-3: $out"
ok "$out"
sleep 0.5
idles r "4 spinners, CPUs 2-3 unparked"
set -- $r
[ "$3" -le 200 ] && [ "$4" -le 200 ] || fail "unparked CPUs 2-3 not used again: idle $3 ‰ / $4 ‰"

out=$(scx_chameleon park 3 --holdoff-ms 0) || fail "park 3: $out"
t0=$(now_ms)
until [ "$(cat /sys/devices/system/cpu/online)" = 0-2 ]; do
	[ $(( $(now_ms) - t0 )) -lt 10000 ] || fail "CPU 3 not offline 10 s after park with hold-off 0"
	usleep 20000
done
sleep 1.2	# the module's numbers are published (scx_stats) each second
line=$(scx_chameleon status | grep "^module: park")
ok "park 3 --holdoff-ms 0: $out; offline: $line"
state_enabled=$(state)
[ "$state_enabled" = enabled ] || fail "scheduler $state_enabled after the module offlined CPU 3"
out=$(scx_chameleon unpark 3) || fail "unpark 3: $out"
t0=$(now_ms)
until [ "$(cat /sys/devices/system/cpu/online)" = 0-3 ]; do
	[ $(( $(now_ms) - t0 )) -lt 10000 ] || fail "CPU 3 not back online 10 s after unpark"
	usleep 20000
done
ok "unpark 3: $out"
kill $spins

for bad in "park 0" "park 9" "park x-y" "unpark 2" "park 1-3 --holdoff-ms 3600001"; do
	out=$(scx_chameleon $bad 2>&1) && fail "'$bad' accepted: $out"
	echo "   $bad: $out"
done
scx_chameleon status | grep -q "^parked:" && fail "a refused request left CPUs parked"
ok "bad park requests refused, nothing parked"
stop_agent

# Emulation: plain busy CPUs at 50 % duty beside a fused representative.
start_agent --events --emulate high
scx_chameleon tag seq --level 1 --tax 0.01 >/dev/null || fail "tag seq"
spin -g /sys/fs/cgroup/seq 60 >/dev/null &
a=$!
spin -c 2 60 >/dev/null &
b=$!
spin -c 3 60 >/dev/null &
c=$!
wait_log "^event  *fuse .*pid=$a .*cpus=0,1" 10000 "no fuse on [0, 1] with --emulate"
sleep 1
shares r 2000 $b $c
set -- $r
ok "--emulate high: spinners on plain CPUs 2 and 3 got $1 ‰ and $2 ‰ of them (schedstat; duty 50 %)"
scx_chameleon status | grep "emulate=" | sed 's/^/   /'
scx_chameleon status | grep -q "^module: emulate=high " || fail "status does not show the emulation"
# The shares themselves are asserted in `emulate`, on isolated CPUs.
[ "$1" -le 650 ] && [ "$2" -le 650 ] || fail "plain CPUs not slowed by --emulate high: $1 / $2 ‰"
kill $a $b $c
stop_agent

out=$(proxy_ctl stats)
echo "$out" | grep -q "^emulate_on=0$" || fail "emulation still on after the agent exited"
[ "$(cat /sys/devices/system/cpu/online)" = 0-3 ] || fail "CPUs online after exit: $(cat /sys/devices/system/cpu/online)"
[ "$(cat /proc/irq/$irq/smp_affinity_list)" = 1 ] || fail "IRQ $irq on $(cat /proc/irq/$irq/smp_affinity_list) after exit"
rmmod_proxy
ok "agent gone: emulation off, CPUs online, IRQ $irq on 1, module removed $TOOK ms after the exit"
pass
