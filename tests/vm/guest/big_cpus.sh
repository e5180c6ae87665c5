#!/bin/sh
# CPU ids above 63 (a VM of more than 64 vCPUs; tests/run boots 72): the
# policy's and the agent's CPU sets must not stop at one 64-bit word.
# Asserted: the scheduler attaches; a tagged level-1 task allowed on CPUs
# 64-65 gets the object [64, 65] and, from the kernel's accounting, runs on
# CPU 64 while CPU 65 (lent) idles; CPU 65 parks (the module takes it offline
# with hold-off 0) and unparks (online again, used again: a spinner pinned
# there runs); SIGTERM detaches cleanly.
. /opt/chameleon/guest/lib.sh

n=$(nproc)
[ "$n" -gt 66 ] || fail "needs more than 66 CPUs, has $n"
last=$(( n - 1 ))
insmod /opt/chameleon/chameleon_proxy.ko || fail "insmod failed"
make_cgroup big
start_agent --events --tag big=level:1,tax:1

taskset -c 64-65 spin -g /sys/fs/cgroup/big $LONG >/dev/null &
a=$!
wait_object $a "64, 65" "object above CPU 63"
sleep 1
shares s 3000 $a cpu64 cpu65
set -- $s
ok "pid $a holds [64, 65]; schedstat: it ran $1 ‰ of 3 s; CPU 64 idle $2 ‰, CPU 65 (lent) idle $3 ‰"
# A task alone on an idle 72-CPU machine: its representative busy with it,
# its lent CPU idle; TCG's own overhead and the agent's wakeups take a little.
[ "$1" -ge 800 ] || fail "the tagged task ran only $1 ‰ of the window"
[ "$3" -ge 800 ] || fail "lent CPU 65 idle only $3 ‰: not kept for the object"
accounts_for "CPU 64" "$2" "$1"
end_tasks $a

out=$(scx_chameleon park 65 --holdoff-ms 0) || fail "park 65: $out"
ok "park 65: $out"
wait_online "0-64,66-$last" 30000 "park 65 with hold-off 0"
[ "$(state)" = enabled ] || fail "scheduler '$(state)' after CPU 65 went offline"
out=$(scx_chameleon unpark 65) || fail "unpark 65: $out"
wait_online "0-$last" 30000 "unpark 65"
ok "unpark 65: $out; online $(online)"
spin -c 65 $LONG >/dev/null &
p=$!
sleep 0.5
shares s 2000 $p cpu65
set -- $s
ok "spinner pinned to unparked CPU 65: $1 ‰ of 2 s, CPU 65 idle $2 ‰"
[ "$1" -ge 800 ] || fail "CPU 65 not used again after unpark: its pinned spinner ran $1 ‰"
end_tasks $p

stop_agent
rmmod_proxy
ok "module removed after the agent exited"
pass
