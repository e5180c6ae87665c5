#!/bin/sh
# Node manager on 8 CPUs (4 cores x 2 threads): three CPU-bound tasks tagged
# level 2 get objects of 4, 2 and 2 CPUs; when the one with 4 exits, the other
# two hold 4 and 4, published within 100 ms of its exit (measured by the agent
# from the BPF exit event to the map update).
. /opt/chameleon/guest/lib.sh

[ "$(nproc)" = 8 ] || fail "needs 8 CPUs, has $(nproc)"
make_cgroup seq
start_agent --events --tag seq=level:2,weight:1,tax:1
pids=
for i in 1 2 3; do
	spin -g /sys/fs/cgroup/seq 30 >/dev/null &
	pids="$pids $!"
	sleep 0.3
done

# size PID: CPUs in PID's object per `scx_chameleon status` (0: none).
size() {
	scx_chameleon status | sed -n "s/^pid $1: .*-> \[\(.*\)\]$/\1/p" | awk -F, '{ print NF }'
}
t0=$(now_ms)
while :; do
	sizes=$(for p in $pids; do size $p; done | sort -n | tr '\n' ' ')
	[ "$sizes" = "2 2 4 " ] && break
	[ $(( $(now_ms) - t0 )) -lt 10000 ] || { scx_chameleon status; fail "objects are '$sizes', expected 2 2 4"; }
	sleep 0.2
done
ok "three level-2 tasks: objects of $sizes CPUs"
scx_chameleon status | sed 's/^/   /'
big=$(for p in $pids; do [ "$(size $p)" = 4 ] && echo $p; done)
rest=$(for p in $pids; do [ "$p" != "$big" ] && echo $p; done)

# wait_sizes "PIDS" "SIZES" WHAT: until the objects of PIDS have SIZES (sorted).
wait_sizes() {
	t0=$(now_ms)
	while :; do
		sizes=$(for p in $1; do size $p; done | sort -n | tr '\n' ' ')
		[ "$sizes" = "$2" ] && return 0
		[ $(( $(now_ms) - t0 )) -lt 5000 ] || { scx_chameleon status; fail "$3: '$sizes', expected '$2'"; }
		sleep 0.1
	done
}
# A task that sleeps (here: stopped) gives its object up after 100 ms and
# asks again when it runs.
kill -STOP "$big"
wait_sizes "$rest" "4 4 " "while pid $big sleeps"
ok "pid $big stopped: its CPUs went to the others (4 4)"
kill -CONT "$big"
wait_sizes "$pids" "2 2 4 " "after pid $big woke"
ok "pid $big running again: objects 2 2 4"
big=$(for p in $pids; do [ "$(size $p)" = 4 ] && echo $p; done)
rest=$(for p in $pids; do [ "$p" != "$big" ] && echo $p; done)

kill -9 "$big"
t0=$(now_ms)
while :; do
	sizes=$(for p in $rest; do size $p; done | sort -n | tr '\n' ' ')
	[ "$sizes" = "4 4 " ] && break
	[ $(( $(now_ms) - t0 )) -lt 5000 ] || { scx_chameleon status; fail "after the exit: '$sizes', expected 4 4"; }
	sleep 0.1
done
scx_chameleon status | sed 's/^/   /'
# The agent's own measure: the rebalance that withdrew $big's object.
line=$(grep -A20 "^unassign pid=$big$" "$AGENT_LOG" | grep -m1 '^rebalanced ')
us=${line##*after_us=}
[ -n "$us" ] || fail "no rebalance line after pid $big's exit"
ok "pid $big (4 CPUs) exited: the others hold 4 and 4, published ${us} us after the exit event"
[ "$us" -le 100000 ] || fail "rebalance took ${us} us (> 100 ms)"
for p in $rest; do kill $p; done
stop_agent
[ ! -e /run/scx_chameleon/status.json ] || fail "status file left behind"
pass
