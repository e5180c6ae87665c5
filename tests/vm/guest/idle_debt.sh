#!/bin/sh
# Borrowing an idle neighbour costs nobody anything and must not be punished
# later (issue 9, finding 8). Owner tagged level 1, tax 1, fuses {0,1} alone
# for 8 s; then a spinner pinned to CPU 1 arrives. At tax 1 the owner should
# still get about half of CPU 1 (Chameleon Fig. 3), not nothing for as long
# as it once fused an idle CPU. Measured: CPU 1's idle share (/proc/stat).
. /opt/chameleon/guest/lib.sh

make_cgroup seq
start_agent --events --tag seq=level:1,tax:1
spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
a=$!
sleep 8
spin -c 1 $LONG >/dev/null &
b=$!
usleep 500000
idle=$(idle_over 1 6)
ok "after 8 s fused alone, with a spinner on CPU 1: CPU 1 idle $idle% of 6 s (/proc/stat)"
end_tasks $a $b
stop_agent
[ "$idle" -ge 15 ] || fail "CPU 1 idle only $idle% at tax 1: debt from borrowing an idle CPU"
pass
