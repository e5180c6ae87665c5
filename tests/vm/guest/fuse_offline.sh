#!/bin/sh
# Cluster scheduling (4): offlining a borrowed CPU while fused splits the
# object; the scheduler stays enabled; the task gets another object.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
start_agent --events --tag seq=level:1,tax:1
spin -g /sys/fs/cgroup/seq 12 >/tmp/spin.out &
a=$!
wait_log "fuse cpu=0 pid=$a .*cpus=0,1 " 5000 "pid $a never fused on {0,1}"
ok "pid $a fused on {0,1}"
echo 0 >/sys/devices/system/cpu/cpu1/online || fail "cannot offline cpu1"
sleep 2
[ "$(state)" = enabled ] || fail "state '$(state)' after offlining the borrowed CPU"
# The object is fused most of the time, but a wake or a tick splits it for a
# few ms many times a second, and cpu1's own hotplug thread wakes on it: the
# offline meets it fused (it must split it, reason offline) or split (nothing
# to do). Which one is read from the object's last fuse or split before the
# cpu_offline event, which the offline op emits after its split.
last=$(awk -v a="pid=$a " '/ (fuse|split) cpu=0 / && index($0, a) && /cpus=0,1 / { l = $0 }
	/ cpu_offline cpu=1$/ { print l; exit }' "$AGENT_LOG")
case "$last" in
*" split "*"reason=offline"*) ok "borrowed cpu1 offlined while fused: object split (reason offline), still enabled" ;;
*" split "*) ok "borrowed cpu1 offlined while split ($(echo "$last" | grep -o 'reason=[a-z]*')), still enabled" ;;
*" fuse "*) fail "the object was fused when cpu1 went offline and stayed so: $last" ;;
*) fail "no fuse or split before cpu1's offline event (${last:-none}); cpu_offline seen: $(grep -c 'cpu_offline cpu=1' "$AGENT_LOG")" ;;
esac
after=$(awk '/ cpu_offline cpu=1$/ { on = 1; next } on' "$AGENT_LOG" | grep " fuse cpu=[0-9]* .*cpus=0,1 " | head -n 1)
[ -z "$after" ] || fail "an object fused on the offline cpu1: $after"
grep -q "DEBUG assign pid=$a cpus=\[2, 3\]" "$AGENT_LOG" || fail "pid $a not moved to {2,3}"
wait_log "fuse cpu=2 pid=$a .*cpus=2,3 " 5000 "pid $a never fused on {2,3}"
ok "pid $a got {2,3} and fused there"
echo 1 >/sys/devices/system/cpu/cpu1/online || fail "cannot online cpu1"
wait $a || fail "spin failed"
agent_alive || fail "agent died"
stop_agent
pass
