#!/bin/sh
# Node manager on 8 CPUs (4 cores x 2 threads): three CPU-bound tasks tagged
# level 2 get objects of 4, 2 and 2 CPUs; a task stopped for > 100 ms gives
# its CPUs up and gets an object back when it runs; when the one with 4 exits,
# the other two hold 4 and 4. Each change is asserted to happen within a
# generous 30 s (liveness, not timing); the agent's own figure for the
# rebalance after the exit (BPF exit event to the map update) is printed,
# and measured with repeats in bench/liveness_times.
. /opt/chameleon/guest/lib.sh

[ "$(nproc)" = 8 ] || fail "needs 8 CPUs, has $(nproc)"
make_cgroup seq
start_agent --events --tag seq=level:2,weight:1,tax:1
pids=
for i in 1 2 3; do
	spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
	pids="$pids $!"
	sleep 0.3
done

# Objects are read from one status snapshot at a time (/tmp/st).
snapshot() { scx_chameleon status >/tmp/st 2>&1; }
# size PID: CPUs in PID's object in the snapshot (0: none).
size() {
	sed -n "s/^pid $1: .*-> \[\(.*\)\]$/\1/p" /tmp/st | awk -F, '{ print NF }'
}
# wait_sizes "PIDS" "SIZES" WHAT: until the objects of PIDS have SIZES (sorted).
wait_sizes() {
	t0=$(now_ms)
	while :; do
		snapshot
		sizes=$(for p in $1; do size $p; done | sort -n | tr '\n' ' ')
		[ "$sizes" = "$2" ] && return 0
		[ $(( $(now_ms) - t0 )) -lt 30000 ] || { cat /tmp/st; fail "$3: '$sizes' after 30 s, expected '$2'"; }
		sleep 0.2
	done
}
# pick_big: BIG = the pid with 4 CPUs in the last snapshot, REST = the others.
pick_big() {
	big=$(for p in $pids; do [ "$(size $p)" = 4 ] && echo $p; done)
	rest=$(for p in $pids; do [ "$p" != "$big" ] && echo $p; done)
	[ -n "$big" ] || { cat /tmp/st; fail "no 4-CPU object"; }
}

wait_sizes "$pids" "2 2 4 " "three level-2 tasks"
ok "three level-2 tasks: objects of 2, 2 and 4 CPUs"
sed 's/^/   /' /tmp/st
pick_big

# A task that sleeps (here: stopped) gives its object up after 100 ms and
# asks again when it runs.
kill -STOP "$big"
wait_sizes "$rest" "4 4 " "while pid $big sleeps"
ok "pid $big stopped: its CPUs went to the others (4 4)"
kill -CONT "$big"
wait_sizes "$pids" "2 2 4 " "after pid $big woke"
ok "pid $big running again: objects 2 2 4"
pick_big

kill -9 "$big"
wait_sizes "$rest" "4 4 " "after pid $big exited"
sed 's/^/   /' /tmp/st
# The agent's own measure: the rebalance that withdrew $big's object.
line=$(grep -A20 "DEBUG unassign pid=$big " "$AGENT_LOG" | grep -m1 'DEBUG rebalanced ')
us=${line##*after_us=}
[ -n "$us" ] || fail "no rebalance line after pid $big's exit"
ok "pid $big (4 CPUs) exited: the others hold 4 and 4, published ${us} us after the exit event (the agent's figure, printed, not asserted)"
# status asks the agent; one that does not answer (stopped here) is read
# from the status file it rewrites every second.
kill -STOP "$AGENT_PID"
t0=$(now_ms)
out=$(scx_chameleon status 2>&1)
rc=$?
took=$(( $(now_ms) - t0 ))
kill -CONT "$AGENT_PID"
[ "$rc" = 0 ] && echo "$out" | grep -q "^agent pid $AGENT_PID," || fail "status of a stopped agent (exit $rc): $out"
echo "$out" | grep -q "^pid .* -> \[" || fail "the status file of a stopped agent lists no object: $out"
ok "status of a stopped agent: from its file after $took ms"
for p in $rest; do kill $p; done
stop_agent
[ ! -e /run/scx_chameleon/status.json ] || fail "status file left behind"
pass
