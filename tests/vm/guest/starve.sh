#!/bin/sh
# Bounded waits (issue 9, finding 1): a tagged nice -20 owner at tax 0.01
# borrows CPU 1 almost all the time; a nice 19 task pinned to CPU 1 must
# still get CPU regularly. By the vtime rule alone it would wait about
# 43 s per slice; the lending bound gives the CPU back after --lend-wait-ms.
# Measured from /proc/<pid>/schedstat: the waiter's longest stretch without
# CPU time, and its total, over 12 s.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
# CPUs 0 and 1 are the owner's and the waiter's alone: this shell, its
# samplers and the agent stay on 2-3, so nothing else splits the object.
taskset -p 0xc $$ >/dev/null || fail "cannot pin the test shell"
start_agent --events --tag seq=level:1,tax:0.01
taskset 0x3 spin -n -20 -g /sys/fs/cgroup/seq $LONG >/dev/null &
a=$!
wait_log "fuse cpu=0 pid=$a " 5000 "the owner never fused"
spin -n 19 -c 1 $LONG >/dev/null &
w=$!
usleep 500000
set -- $(longest_stall $w 12)
end_tasks $a $w
reasons=$(grep -E "split cpu=0 pid=$a " "$AGENT_LOG" | sed -n 's/.*reason=\([a-z]*\).*/\1/p' | sort | uniq -c | tr -s ' \n' ' ')
ok "pinned nice-19 waiter on the lent CPU: $2 ms of CPU in 12 s, longest stretch without any $1 ms; owner's splits by reason:$reasons"
[ "$(state)" = enabled ] || fail "scheduler ejected"
[ "$2" -ge 200 ] || fail "the waiter got $2 ms of CPU in 12 s"
[ "$1" -le 2000 ] || fail "the waiter went $1 ms without CPU"
grep -q "split cpu=0 pid=$a .*reason=bound" "$AGENT_LOG" || fail "no split for the wait bound"
stop_agent
pass
