#!/bin/sh
# Tagged tasks asleep when the scheduler attaches ask for no object until
# they wake (issue 32, found by bench/loop_lateness: they were requesters
# from the attach on, and the rotation gave pairs in turn to tasks that
# never ran while the one spinner waited).
#   a: 20 sleepers and a spinner in a tagged cgroup before the attach: only
#      the spinner is assigned an object, and it keeps it (sampled over 3 s,
#      a hundred rotation periods);
#   b: a sleeper that wakes and spins asks then, and gets an object.
. /opt/chameleon/guest/lib.sh
TEST=sleepers_at_attach
CG=/sys/fs/cgroup/seq
make_cgroup seq
mkfifo /tmp/wake.fifo
sleepers=""
n=0
while [ $n -lt 20 ]; do
	sh -c 'echo $$ >'$CG'/cgroup.procs && exec sleep 1000' &
	sleepers="$sleepers $!"
	n=$((n + 1))
done
# The one that wakes in b: blocked on the fifo, then it spins.
sh -c 'echo $$ >'$CG'/cgroup.procs && read x </tmp/wake.fifo && exec spin 20' >/dev/null &
w=$!
spin -g $CG 40 >/dev/null &
s=$!
sleep 1
start_agent --events --tag seq=level:1
until_ok 10000 "the spinner (pid $s) never got a pair" has_pair $s
ok "a: the spinner (pid $s) holds [$(object $s)]"
n=0
while [ $n -lt 15 ]; do
	has_pair $s || fail "a: the spinner (pid $s) lost its object ([$(object $s)]) with only sleepers beside it"
	usleep 200000
	n=$((n + 1))
done
others=$(grep "DEBUG.* assign pid=" "$AGENT_LOG" | grep -v " assign pid=$s " | sed 's/.* assign pid=\([0-9]*\) .*/\1/' | sort -u | tr '\n' ' ')
[ -z "$others" ] || fail "a: objects assigned to tasks that sleep (pids $others)"
demands=$(grep -c "^event  *demand .* level=1" "$AGENT_LOG")
[ "$demands" -le 2 ] || fail "a: $demands DEMANDs at the attach for 1 running task and 21 asleep"
ok "a: 21 tagged sleepers asked for nothing ($demands DEMAND), the spinner kept its pair over 3 s"

m=$(log_mark)
echo go >/tmp/wake.fifo
wait_log_after "$m" "^event  *demand .*pid=$w .*level=1" 10000 "b: pid $w woke and spins, and never asked for an object"
wait_log_after "$m" "DEBUG.* assign pid=$w " 10000 "b: pid $w asked and was never assigned an object"
ok "b: the sleeper (pid $w) woke, asked and was assigned an object"
kill $sleepers $w $s 2>/dev/null
agent_alive || fail "agent died"
stop_agent
pass
