#!/bin/sh
# Cluster scheduling: a level-2 task ({0,1,2,3}) whose CPU 3 is busy with a
# pinned task it may not preempt (tax 100) fuses the largest smaller object
# whose CPUs qualify, {0,1} (Chameleon §4.3.1, last paragraph). B, on CPU 3,
# is never preempted by it: schedstat gives B nearly all of CPU 3.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
start_agent --events --tag seq=level:2,tax:100
spin -c 3 11 >/dev/null &
b=$!
sleep 0.5
spin -g /sys/fs/cgroup/seq 10 >/dev/null &
a=$!
b0=$(run_ns $b) t0=$(now_ms)
wait $a || fail "spin A failed"
b1=$(run_ns $b) t1=$(now_ms)
wait $b || fail "spin B failed"
bpct=$(( (b1 - b0) / 10000 / (t1 - t0) ))
ok "B ran $bpct% of the time on CPU 3 (schedstat)"
[ "$bpct" -ge 85 ] || fail "B got only $bpct% of CPU 3: the object took it despite tax 100"
stop_agent
grep -q "DEBUG assign pid=$a cpus=\[0, 1, 2, 3\]" "$AGENT_LOG" || fail "pid $a did not get {0,1,2,3}"
n=$(grep -c "partial_fuse cpu=0 pid=$a .*cpus=0,1 of=4" "$AGENT_LOG")
[ "$n" -ge 1 ] || fail "no partial fuse of {0,1}"
ok "$n partial fuses of {0,1} out of {0,1,2,3}; $(count_events fuse) whole fuses; fused $(fused_pct $a)%"
pass
