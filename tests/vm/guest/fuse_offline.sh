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
grep -q "split cpu=0 pid=$a .*reason=offline" "$AGENT_LOG" || fail "no split with reason offline"
ok "borrowed cpu1 offlined: object split (reason offline), still enabled"
grep -q "DEBUG assign pid=$a cpus=\[2, 3\]" "$AGENT_LOG" || fail "pid $a not moved to {2,3}"
wait_log "fuse cpu=2 pid=$a .*cpus=2,3 " 5000 "pid $a never fused on {2,3}"
ok "pid $a got {2,3} and fused there"
echo 1 >/sys/devices/system/cpu/cpu1/online || fail "cannot online cpu1"
wait $a || fail "spin failed"
agent_alive || fail "agent died"
stop_agent
pass
