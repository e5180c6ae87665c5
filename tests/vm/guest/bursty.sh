#!/bin/sh
# A bursty tagged task keeps getting its object (issue 9, finding 4). It runs
# 30 ms and sleeps 150 ms, longer than the 100 ms after which the node manager
# takes a sleeper's object back; each wake must ask again, also when the task
# wakes on an idle CPU (select_cpu dispatches it directly, enqueue is skipped).
. /opt/chameleon/guest/lib.sh

make_cgroup seq
start_agent --events --tag seq=level:1,tax:1
spin -b 30:150 -g /sys/fs/cgroup/seq 8 >/dev/null &
a=$!
sleep 4
n0=$(grep -c "fuse cpu=0 pid=$a " "$AGENT_LOG")
w0=$(grep -c "wake .*pid=$a " "$AGENT_LOG")
sleep 3
n1=$(grep -c "fuse cpu=0 pid=$a " "$AGENT_LOG")
w1=$(grep -c "wake .*pid=$a " "$AGENT_LOG")
wait $a || fail "spin failed"
stop_agent
ok "in 3 s of bursts (about 16 wakes): $((w1 - w0)) wake events, $((n1 - n0)) fuses (before: $w0 wakes, $n0 fuses)"
[ $((w1 - w0)) -ge 8 ] || fail "only $((w1 - w0)) wakes reported in 3 s"
[ $((n1 - n0)) -ge 8 ] || fail "only $((n1 - n0)) fuses in 3 s of bursts: the object was not given back on wake"
pass
