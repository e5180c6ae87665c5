#!/bin/sh
# A CPU that an idle search handed out and the policy refused (a lent CPU,
# a representative between its owner's runs) must not idle unseen by the
# searches that follow: the kernel takes a CPU's idle bit when its search
# hands the CPU out, and sets it again only when the CPU enters the idle
# loop anew. Here: a tagged level-1 spinner T (tax 0.01) holds {0,1}, CPU 1
# lent and idle, while 6 bursty tasks (1 ms of work every 4 ms) wake all
# over the machine for 3 s, so that their wakeups' searches meet CPU 1;
# then T ends (its object with it) and the bursty tasks go on.
# Asserted from /proc/stat over the 3 s after T ended (cpu_share, absolute
# idle): CPU 1 idles no more than the busiest-idle other CPU + 150 per
# mille, i.e. the wakeups find it as they find the others; and, while T
# held it, CPU 1 idled >= 500 per mille (the object kept it most of the
# time: the bursty tasks waiting there split it now and then).
. /opt/chameleon/guest/lib.sh

make_cgroup seq
start_agent --events --tag seq=level:1,tax:0.01
spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
t=$!
wait_object $t "0, 1" "T's object"
b=
for i in 1 2 3 4 5 6; do spin -b 1:3 $LONG >/dev/null & b="$b $!"; done
shares LENT 3000 cpu1
kill $t
wait $t 2>/dev/null
sleep 1
shares AFTER 3000 cpu0 cpu1 cpu2 cpu3
end_tasks $b
set -- $AFTER
ok "while lent: CPU 1 idle $LENT per mille; after the object: idle per mille CPU0 $1 CPU1 $2 CPU2 $3 CPU3 $4"
max=$1
for v in $3 $4; do [ "$v" -le "$max" ] || max=$v; done
[ "$LENT" -ge 500 ] || fail "CPU 1 idled only $LENT per mille while lent to T: no object to test with"
[ "$2" -le $(( max + 150 )) ] || fail "CPU 1 idled $2 per mille after its object ended, the others at most $max: the wakeups do not find it"
stop_agent
pass
