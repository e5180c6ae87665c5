#!/bin/sh
# (b) Offlining and onlining a CPU under load leaves the scheduler enabled:
# hotplug_seq changes, the agent does not exit, the events reach it.
. /opt/chameleon/guest/lib.sh

cpu=$(( $(nproc) - 1 ))
start_agent --events
seq0=$(cat /sys/kernel/sched_ext/hotplug_seq)
stress-ng --cpu "$(nproc)" --timeout 15 >/tmp/stress.log 2>&1 &
load=$!
sleep 2
for round in 1 2 3; do
	echo 0 >/sys/devices/system/cpu/cpu$cpu/online || fail "cannot offline cpu$cpu"
	[ "$(cat /sys/devices/system/cpu/cpu$cpu/online)" = 0 ] || fail "cpu$cpu still online"
	sleep 1
	[ "$(state)" = enabled ] || fail "state '$(state)' with cpu$cpu offline (round $round)"
	echo 1 >/sys/devices/system/cpu/cpu$cpu/online || fail "cannot online cpu$cpu"
	sleep 1
	[ "$(state)" = enabled ] || fail "state '$(state)' after cpu$cpu came back (round $round)"
	ops_is_chameleon || fail "root/ops '$(ops)' after hotplug"
	agent_alive || fail "agent exited after hotplug round $round"
done
seq1=$(cat /sys/kernel/sched_ext/hotplug_seq)
[ "$seq1" != "$seq0" ] || fail "hotplug_seq unchanged ($seq0)"
ok "3 offline/online rounds of cpu$cpu under load: still enabled, hotplug_seq $seq0 -> $seq1"
wait "$load" || fail "stress-ng failed under hotplug"
ok "load completed"
stop_agent
n_off=$(grep -c "event  *cpu_offline cpu=$cpu" "$AGENT_LOG")
n_on=$(grep -c "event  *cpu_online cpu=$cpu" "$AGENT_LOG")
[ "$n_off" = 3 ] && [ "$n_on" = 3 ] || fail "agent saw $n_off offline / $n_on online events, expected 3/3"
ok "agent received 3 cpu_offline and 3 cpu_online events"
pass
