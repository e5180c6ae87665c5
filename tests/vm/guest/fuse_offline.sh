#!/bin/sh
# Cluster scheduling (4): offlining a borrowed CPU while fused splits the
# object; the scheduler stays enabled; the task gets another object. With the
# module, a device IRQ pinned to the borrowed CPU (moved to the representative
# while it is lent) has exactly its affinity back once the CPU is online
# again: neither the kernel's migration of a dying CPU's IRQs nor the restore
# racing the offline may lose it.
. /opt/chameleon/guest/lib.sh

insmod /opt/chameleon/chameleon_proxy.ko || fail "insmod failed"
aff() { cat "/proc/irq/$1/smp_affinity_list"; }
pick_irq 1 || fail "no device IRQ whose affinity can be set to CPU 1"
irq=$IRQ

make_cgroup seq
start_agent --events --tag seq=level:1,tax:1
spin -g /sys/fs/cgroup/seq 12 >/tmp/spin.out &
a=$!
wait_log "fuse cpu=0 pid=$a .*cpus=0,1 " 5000 "pid $a never fused on {0,1}"
ok "pid $a fused on {0,1}; IRQ $irq (pinned to 1) on $(aff "$irq")"
echo 0 >/sys/devices/system/cpu/cpu1/online || fail "cannot offline cpu1"
sleep 2
[ "$(state)" = enabled ] || fail "state '$(state)' after offlining the borrowed CPU"
grep -q "split cpu=0 pid=$a .*reason=offline" "$AGENT_LOG" || fail "no split with reason offline"
ok "borrowed cpu1 offlined: object split (reason offline), still enabled"
grep -q "^assign pid=$a cpus=\[2, 3\]" "$AGENT_LOG" || fail "pid $a not moved to {2,3}"
wait_log "fuse cpu=2 pid=$a .*cpus=2,3 " 5000 "pid $a never fused on {2,3}"
ok "pid $a got {2,3} and fused there"
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
pass
