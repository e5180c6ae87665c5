#!/bin/sh
# No CPU stays lent after objects churn (issue 9, findings 3 and 5): two
# tagged tasks fuse while their cgroup is retagged between levels 1, 2 and
# untagged 15 times (the node manager rewrites their assignments while BPF
# fuses and splits them). Afterwards, untagged, a spinner pinned to every CPU
# must run: no CPU may idle, whatever BPF's own state says (idle time from
# /proc/stat and each spinner's schedstat over one window, which must add up
# to the window on every CPU, short by at most what every other thread ran:
# the agent and the shell run beside the spinners).
# Positive control, so that a churn in which nothing fuses cannot pass: both
# tasks fused during the churn (fuse events), and at its end, tagged level
# 1, the kernel has the steady task running and the CPU lent to it idle.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
scx_chameleon tag seq --level 1 --tax 0.01 >/dev/null || fail "tag failed"
start_agent --events
spin -g /sys/fs/cgroup/seq 300 >/dev/null &
a1=$!
spin -b 7:3 -g /sys/fs/cgroup/seq 300 >/dev/null &
a2=$!
fuses() { grep -c "^event  *fuse .*pid=$1 " "$AGENT_LOG"; }
i=0
while [ $i -lt 15 ]; do
	scx_chameleon tag seq --level 2 >/dev/null || fail "retag 2 failed"
	usleep 50000
	scx_chameleon tag seq --level 1 >/dev/null || fail "retag 1 failed"
	usleep 30000
	scx_chameleon untag seq >/dev/null || fail "untag failed"
	usleep 20000
	scx_chameleon tag seq --level 1 --tax 0.01 >/dev/null || fail "tag failed"
	i=$((i + 1))
done
f1=$(fuses $a1) f2=$(fuses $a2)
ok "during the churn: $f1 fuses of pid $a1 (steady), $f2 of pid $a2 (bursty)"
[ "$f1" -gt 0 ] && [ "$f2" -gt 0 ] || fail "a tagged task never fused during the churn ($f1, $f2 fuse events): the churn tested nothing"
# The last tag (level 1) stands: a1's object, and the kernel's view of it.
until_ok 5000 "pid $a1 has no level-1 object after the churn: [$(object $a1)]" has_pair $a1
rep=$PAIR_REP lent=$PAIR_LENT
shares k 2000 $a1 "cpu$rep" "cpu$lent"
set -- $k
ok "after the churn, level 1: pid $a1 on [$rep, $lent] ran $1 ‰ of 2 s (schedstat); representative CPU $rep idle $2 ‰, lent CPU $lent idle $3 ‰ (/proc/stat)"
[ "$1" -ge 800 ] || fail "the fused task ran $1 ‰ of the window"
[ "$3" -ge 800 ] || fail "CPU $lent, lent to pid $a1, idled $3 ‰ of the window: not lent, in the kernel's accounting"
scx_chameleon untag seq >/dev/null || fail "untag failed"
kill $a1 $a2 || fail "a tagged task died"
wait $a1 $a2 2>/dev/null
sleep 1
pids=
for c in 0 1 2 3; do
	spin -c $c $LONG >/dev/null &
	pids="$pids $!"
done
sleep 1
shares k 3000 $pids cpu0 cpu1 cpu2 cpu3 rest
end_tasks $pids
set -- $k
rest=$9
worst=0
for c in 0 1 2 3; do
	eval "run=\$$(( c + 1 )) idle=\$$(( c + 5 ))"
	echo "cpu$c: idle $idle ‰, its pinned spinner ran $run ‰ of the window"
	accounts_for "cpu$c" "$idle" "$run" 80 "$rest"
	[ "$idle" -gt "$worst" ] && worst=$idle
done
[ "$(state)" = enabled ] || fail "scheduler ejected"
ok "after 60 retags, with a spinner on every CPU the most idle CPU idled $worst ‰ of the window"
[ "$worst" -le 100 ] || { scx_chameleon status; fail "a CPU idled $worst ‰ with a spinner pinned to it: left lent"; }
stop_agent
pass
