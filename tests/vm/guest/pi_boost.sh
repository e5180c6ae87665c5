#!/bin/sh
# A tagged task that a priority-inheritance boost takes out of sched_ext for
# a moment and gives back (the kernel runs ops.disable, then ops.enable) has
# not exited: the agent gets no TASK_EXIT for it and keeps its object, which
# fuses again after the boost. pi_boost: the tagged thread holds a PI mutex
# 5 ms of every 50, a SCHED_FIFO thread of the same process asks for it
# every 20 ms (tests/vm/tools/pi_boost.c).
# Asserted over 8 s: the RT thread waited (so the holder was boosted) >= 10
# times; exactly one task_exit event for the holder, after it ended; the
# agent never unassigned it while it ran; it fused more than once.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
start_agent --events --tag seq=level:1,tax:1
pi_boost -g /sys/fs/cgroup/seq 8 >/tmp/pi.out &
pi=$!
wait $pi || fail "pi_boost failed: $(cat /tmp/pi.out)"
get boosts sed -n 's/.*boosts=\([0-9]*\).*/\1/p' /tmp/pi.out
sleep 1
stop_agent
exits=$(grep -c "^event  *task_exit .* pid=$pi " "$AGENT_LOG")
unassigns=$(grep -c "DEBUG unassign pid=$pi " "$AGENT_LOG")
fuses=$(grep -c "^event  *fuse .* pid=$pi " "$AGENT_LOG")
ok "holder pid $pi: boosted >= $boosts times; task_exit events $exits, unassigned $unassigns times, fused $fuses times"
[ "$boosts" -ge 10 ] || fail "the RT thread waited only $boosts times: too few boosts to test"
[ "$exits" = 1 ] || fail "$exits task_exit events for pid $pi (a class change is no exit)"
[ "$unassigns" -le 1 ] || fail "the agent unassigned pid $pi $unassigns times while it ran"
[ "$fuses" -ge 2 ] || fail "pid $pi fused $fuses times: not again after a boost"
pass
