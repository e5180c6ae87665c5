#!/bin/sh
# A tax-only retag reaches a running CPU-bound task (issue 9, finding 8).
# Owner tagged level 1 at tax 100, a spinner pinned to CPU 1: CPU 1 is hardly
# ever lent. Retag to tax 0.01 while both run: CPU 1 must now idle a large
# part of the time (/proc/stat).
. /opt/chameleon/guest/lib.sh

make_cgroup seq
scx_chameleon tag seq --level 1 --tax 100 >/dev/null || fail "tag failed"
start_agent --events
spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
a=$!
spin -c 1 $LONG >/dev/null &
b=$!
sleep 2
before=$(idle_over 1 4)
scx_chameleon tag seq --tax 0.01 >/dev/null || fail "retag failed"
sleep 1
after=$(idle_over 1 4)
ok "CPU 1 idle $before% at tax 100, $after% after the retag to tax 0.01 (/proc/stat)"
end_tasks $a $b
stop_agent
[ "$before" -le 5 ] || fail "tax 100: CPU 1 idle $before%"
[ "$after" -ge 25 ] || fail "after the retag to 0.01, CPU 1 idle only $after%: the new tax did not reach the task"
pass
