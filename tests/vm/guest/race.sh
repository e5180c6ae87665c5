#!/bin/sh
# No CPU stays lent after objects churn (issue 9, findings 3 and 5): two
# tagged tasks fuse while their cgroup is retagged between levels 1, 2 and
# untagged 15 times (the node manager rewrites their assignments while BPF
# fuses and splits them). Afterwards, untagged, a spinner pinned to every CPU
# must run: no CPU may idle (/proc/stat), whatever BPF's own state says.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
scx_chameleon tag seq --level 1 --tax 0.01 >/dev/null || fail "tag failed"
start_agent
spin -g /sys/fs/cgroup/seq 300 >/dev/null &
a1=$!
spin -b 7:3 -g /sys/fs/cgroup/seq 300 >/dev/null &
a2=$!
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
for c in 0 1 2 3; do eval from$c=\"$(cpu_jiffies $c)\"; done
sleep 3
for c in 0 1 2 3; do eval to$c=\"$(cpu_jiffies $c)\"; done
for p in $pids; do echo "spinner $p ran $(( $(run_ns $p) / 1000000 )) ms"; done
end_tasks $pids
worst=0
for c in 0 1 2 3; do
	eval from=\"\$from$c\" to=\"\$to$c\"
	idle=$(idle_pct "$from" "$to")
	[ "$idle" -gt "$worst" ] && worst=$idle
	echo "cpu$c idle $idle% (idle, total jiffies: $from -> $to)"
done
[ "$(state)" = enabled ] || fail "scheduler ejected"
ok "after 60 retags, with a spinner on every CPU the most idle CPU idled $worst% (/proc/stat)"
[ "$worst" -le 10 ] || { scx_chameleon status; fail "a CPU idled $worst% with a spinner pinned to it: left lent"; }
stop_agent
pass
