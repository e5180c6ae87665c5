#!/bin/sh
# One placement rule on every path: a task whose object's representative is
# parked is not sent there. T (tagged level 1, allowed on CPUs 2 and 3 only)
# holds {2,3}; `scx_chameleon park 2` (no module: the policy alone stops
# using the CPU) ends the object; T's assignment may still name CPU 2 until
# the agent changes it, and the representative's rule (parked: only what
# can run nowhere else) must keep T off it meanwhile: T runs on CPU 3 as
# under EEVDF. Asserted from T's schedstat over 3 s after the park: it runs
# >= 800 per mille of the window (a task sent back to the parked CPU at
# every slice end waits there for the guard's move each time: about a
# third), and never on CPU 2 (task_cpu, sampled).
. /opt/chameleon/guest/lib.sh

make_cgroup seq
start_agent --events --tag seq=level:1,tax:1
taskset 0xc spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
t=$!
wait_object $t "2, 3" "T's object"
out=$(scx_chameleon park 2 --holdoff-ms 60000) || fail "park 2: $out"
sleep 0.5
shares T_SHARE 3000 $t
get samples task_cpu $t 2 20 20
set -- $samples
on2=$1
ok "park 2: $out; T ran $T_SHARE per mille after it, on CPU 2 in $on2 of 20 samples; T's object now [$(object $t)]"
scx_chameleon unpark 2 >/dev/null || fail "unpark 2"
end_tasks $t
[ "$on2" = 0 ] || fail "T was on parked CPU 2 in $on2 of 20 samples"
[ "$T_SHARE" -ge 800 ] || fail "T ran only $T_SHARE per mille after its representative was parked"
stop_agent
pass
