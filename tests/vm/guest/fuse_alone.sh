#!/bin/sh
# Cluster scheduling (1): one tagged CPU-bound task on an otherwise idle VM
# fuses its SMT pair and stays fused for >= 90% of its run time.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
start_agent --events --tag seq=level:1,tax:1
spin -g /sys/fs/cgroup/seq 10 >/tmp/spin.out &
a=$!
wait $a || fail "spin failed"
sleep 1
stop_agent
grep -q "demand .* pid=$a .*level=1" "$AGENT_LOG" || fail "no demand event for pid $a"
grep -q "DEBUG assign pid=$a cpus=\[0, 1\]" "$AGENT_LOG" || fail "pid $a was not given the SMT pair {0,1}"
grep -q "fuse cpu=0 pid=$a .*cpus=0,1 " "$AGENT_LOG" || fail "no fuse event on cpus 0,1"
pct=$(fused_pct $a)
ok "fused $pct% of its run time ($(task_times $a) ns run/fused), $(count_events fuse) fuse events"
[ "$pct" -le 100 ] || fail "fused $pct% of its run time: fused time > run time"
[ "$pct" -ge 90 ] || fail "fused only $pct% (< 90%)"
pass
