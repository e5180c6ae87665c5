#!/bin/sh
# chameleon_proxy with the scheduler (4 CPUs): a device IRQ pinned to a CPU
# that a fused object borrows moves to the representative while it is lent;
# that CPU is then taken offline through sysfs while fused and brought back.
# Once the task is gone, the IRQ must have exactly its affinity back: neither
# the kernel's migration of a dying CPU's IRQs (it breaks an affinity with no
# CPU left to all CPUs, for good) nor a restore racing the offline may lose it.
# (fuse_offline checks the split itself, without the module.)
. /opt/chameleon/guest/lib.sh

insmod /opt/chameleon/chameleon_proxy.ko || fail "insmod failed"
aff() { cat "/proc/irq/$1/smp_affinity_list"; }
pick_irq 1 || fail "no device IRQ whose affinity can be set to CPU 1"
irq=$IRQ

make_cgroup seq
start_agent --events --tag seq=level:1,tax:1
# Pinned to 0-1: its object is [0, 1] with 0 the representative, whatever
# the kernel does with it while CPU 1 is away (unpinned, it was seen to move
# to 2 and fuse [2, 3] for good after an offline that missed the object).
taskset -c 0,1 spin -g /sys/fs/cgroup/seq 12 >/tmp/spin.out &
a=$!
wait_log "fuse cpu=0 pid=$a .*cpus=0,1 " 5000 "pid $a never fused on {0,1}"
# The offline must hit the object fused (split reason=offline): otherwise
# the IRQ was the user's again when CPU 1 went, and the kernel's to break.
# The owner is preempted now and then (split reason=preempt): up to 5 tries.
try=1
while :; do
	t0=$(now_ms)
	until [ "$(aff "$irq")" = 0 ]; do
		[ $(( $(now_ms) - t0 )) -lt 10000 ] || fail "IRQ $irq on $(aff "$irq") while CPU 1 should be lent to 0"
		usleep 10000
	done
	echo 0 >/sys/devices/system/cpu/cpu1/online || fail "cannot offline cpu1"
	sleep 2
	grep -q "split cpu=0 pid=$a .*reason=offline" "$AGENT_LOG" && break
	[ $try -lt 5 ] || fail "5 offlines of cpu1, none while {0,1} was fused"
	echo "   try $try: the object was not fused when cpu1 went; again"
	m=$(log_mark)
	echo 1 >/sys/devices/system/cpu/cpu1/online || fail "cannot online cpu1"
	echo 1 >"/proc/irq/$irq/smp_affinity_list" || fail "IRQ $irq back to 1"
	try=$((try + 1))
	wait_log_after "$m" "fuse cpu=0 pid=$a .*cpus=0,1 " 10000 "pid $a never fused on {0,1} again"
done
ok "pid $a fused on {0,1}, IRQ $irq (pinned to 1) moved to 0; cpu1 offlined while fused (try $try)"
[ "$(state)" = enabled ] || fail "state '$(state)' after offlining the borrowed CPU"
echo "   cpu1 offline: IRQ $irq on $(aff "$irq")"
echo 1 >/sys/devices/system/cpu/cpu1/online || fail "cannot online cpu1"
wait $a || fail "spin failed"
t0=$(now_ms)
until [ "$(aff "$irq")" = 1 ]; do
	[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "IRQ $irq on $(aff "$irq") 5 s after cpu1 came back and the task ended, was 1"
	usleep 20000
done
ok "IRQ $irq back on 1"
agent_alive || fail "agent died"
stop_agent
rmmod chameleon_proxy || fail "rmmod right after the agent stopped"
pass
