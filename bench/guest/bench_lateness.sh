#!/bin/sh
# How late the agent's loop runs its clock (bench, never asserted): the
# share rotation every 30 ms with three level-1 spinners on 4 CPUs (pairs
# for two, so one moves each period), in two cases, for each agent build
# given (AGENTS, default scx_chameleon; chameleon-base: another build, by
# --with), interleaved ROUNDS times in this one boot (CASES, default "idle
# load"; "rules", "clients" and "parks" are the load's parts alone):
#  idle  nothing else;
#  load  a rules file matching on comm and uid (every process of every
#        cgroup read each second) over NR_CG cgroups of PER sleeping
#        processes each (sleepers, uid 0: the rule, for uid 1000, reads
#        them all and tags none; tagged, 10,000 sleepers would each be a
#        requester the rotation serves in turn, a cost of their own), CLIENTS control clients trickling
#        status requests a byte every 40 ms (trickle), and the module
#        parking and unparking CPU 3 (hold-off 100 ms, so it goes offline
#        and back each time).
# Measured over WINDOW_S seconds, from the agent's own log of what it
# wrote into the assignments map ("assign pid=… ts_ns=…", one burst per
# rotation that moved an object): the intervals between rotations (p50,
# p99, max, in µs); where the agent exports it (chameleon_loop_late_seconds),
# its histogram of the loop's lateness over the same window (p99, µs); and
# the agent's CPU time, all threads and per thread name (ms).
#   bench_lateness.sh [ROUNDS] [WINDOW_S] [NR_CG] [PER] [CLIENTS]
# Prints "lateness round=R agent=A case=C rotations=N period_p50_us=…
# period_p99_us=… period_max_us=… hist_p99_us=… agent_ms=… threads_ms=…".
. /opt/chameleon/guest/lib.sh
TEST=bench_lateness
CG=/sys/fs/cgroup
rounds=${1:-2} window=${2:-10} nr_cg=${3:-2000} per=${4:-5} clients=${5:-10}
agents=${AGENTS:-scx_chameleon}
RULES=/tmp/lateness.rules
SOCK=/run/scx_chameleon/control.sock

# Per agent thread: "COMM USER+SYS_MS" so far (threads of one name summed).
agent_threads() {
	awk '{ c = $0; sub(/^[^(]*\(/, "", c); sub(/\).*/, "", c); gsub(/ /, "_", c)
		sub(/.*\) /, ""); t[c] += ($12 + $13) * 10 } END { for (c in t) print c, t[c] }' /proc/$AGENT_PID/task/*/stat 2>/dev/null
}

# "COMM=MS ..." of the window, threads with any CPU time in it.
threads_delta() {
	awk 'NR == FNR { a[$1] = $2; next } { d = $2 - a[$1]; if (d > 0) printf "%s=%d ", $1, d }' "$1" "$2"
}

agent_ms() {
	awk '{ sub(/.*\) /, ""); t += $12 + $13 } END { print t * 10 }' /proc/$AGENT_PID/task/*/stat 2>/dev/null || echo 0
}

# The loop's histogram as the agent exports it: "BOUND_S COUNT" cumulative.
hist() {
	scx_chameleon metrics 2>/dev/null | sed -n 's/^chameleon_loop_late_seconds_bucket{le="\([^"]*\)"} \([0-9]*\)$/\1 \2/p'
}

# p99 of the window between two hist samples, µs ("-": none exported).
hist_p99() {
	awk 'NR == FNR { a[$1] = $2; next } { d = $2 - a[$1]; b[++n] = $1; c[n] = d }
		END { if (!n || !c[n]) { print "-"; exit } r = c[n] * 0.99
			for (i = 1; i <= n; i++) if (c[i] >= r) { v = b[i]; break }
			if (v == "+Inf") print "inf"; else printf "%d\n", v * 1e6 }' "$1" "$2"
}

# Rotation intervals from the agent's log lines L0+1..L1: the times of its
# bursts of "assign" lines (one per rotation that moved an object), as
# "rotations=N period_p50_us=… period_p99_us=… period_max_us=…".
periods() {
	sed -n "$(( $1 + 1 )),$2p" "$AGENT_LOG" | sed -n 's/.*[^n]assign pid=.* ts_ns=\([0-9]*\).*/\1/p; s/^assign pid=.* ts_ns=\([0-9]*\).*/\1/p' |
		awk '
		{ t = $1; if (last && t - last < 3000000) { last = t; next }
		  if (prev) v[++n] = (t - prev) / 1000
		  prev = t; last = t }
		END {
			for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { x = v[i]; v[i] = v[j]; v[j] = x }
			if (!n) { print "rotations=0 period_p50_us=- period_p99_us=- period_max_us=-"; exit }
			p50 = v[int((n + 1) * 0.5)]; k = int(n * 0.99 + 0.999); if (k > n) k = n; if (k < 1) k = 1
			printf "rotations=%d period_p50_us=%d period_p99_us=%d period_max_us=%d\n", n + 1, p50, v[k], v[n] }'
}

cat >$RULES <<'RULES'
[[rule]]
name = "sleepers"
match = { comm = "latwork", uid = 1000 }
level = 1
RULES

insmod /opt/chameleon/chameleon_proxy.ko || fail "insmod failed"
t=$(now_ms)
sleepers -r $CG/lat -c "$nr_cg" -p "$per" -N latwork >/tmp/sleepers.out 2>&1 &
SLEEPERS=$!
until grep -q "^sleepers ready" /tmp/sleepers.out; do
	kill -0 $SLEEPERS 2>/dev/null || fail "sleepers died: $(cat /tmp/sleepers.out)"
	sleep 1
done
ok "$(cat /tmp/sleepers.out) in $nr_cg cgroups after $(( $(now_ms) - t )) ms; $(ls /proc | grep -c '^[0-9]') processes in all"

one() {
	r=$1 agent=$2 case=$3
	if [ "$case" = load ] || [ "$case" = rules ]; then
		AGENT_BIN=$agent start_agent --share-period-ms 30 --rules $RULES >/dev/null
	else
		AGENT_BIN=$agent start_agent --share-period-ms 30 >/dev/null
	fi
	pids= helpers=
	# An agent whose loop scans (an older build) may not answer within the
	# CLI's 5 s: asked again, for up to a minute, and the time it took said.
	t=$(now_ms)
	for g in a b c; do
		make_cgroup bl_$g
		until scx_chameleon tag bl_$g --level 1 >/dev/null 2>&1; do
			[ $(( $(now_ms) - t )) -lt 60000 ] || fail "$agent ($case): cannot tag bl_$g within 60 s"
		done
	done
	tag_ms=$(( $(now_ms) - t ))
	for g in a b c; do
		spin -g $CG/bl_$g $(( window + 60 )) >/dev/null &
		pids="$pids $!"
	done
	if [ "$case" = load ] || [ "$case" = clients ]; then
		i=0
		while [ $i -lt "$clients" ]; do
			trickle $SOCK 40 &
			helpers="$helpers $!"
			i=$(( i + 1 ))
		done
	fi
	if [ "$case" = load ] || [ "$case" = parks ]; then
		( while :; do
			scx_chameleon park 3 --holdoff-ms 100 >/dev/null 2>&1
			sleep 1
			scx_chameleon unpark 3 >/dev/null 2>&1
			sleep 1
		done ) &
		helpers="$helpers $!"
	fi
	# Settle (objects granted, the first scans done), then the window.
	sleep 3
	hist >/tmp/h0
	a0=$(agent_ms)
	agent_threads >/tmp/t0
	l0=$(wc -l <"$AGENT_LOG")
	sleep "$window"
	l1=$(wc -l <"$AGENT_LOG")
	a1=$(agent_ms)
	agent_threads >/tmp/t1
	hist >/tmp/h1
	# (Not a bare `wait`: it would wait for the sleepers too.)
	for p in $helpers; do kill $p 2>/dev/null; wait $p 2>/dev/null; done
	scx_chameleon unpark 3 >/dev/null 2>&1
	echo "lateness round=$r agent=$agent case=$case $(periods $l0 $l1) hist_p99_us=$(hist_p99 /tmp/h0 /tmp/h1) agent_ms=$(( a1 - a0 )) tag3_ms=$tag_ms threads_ms=$(threads_delta /tmp/t0 /tmp/t1 | tr ' ' ',')"
	end_tasks $pids
	stop_agent
	for g in a b c; do rmdir $CG/bl_$g 2>/dev/null; done
	wait_online 0-3
}

r=1
while [ $r -le "$rounds" ]; do
	for agent in $agents; do
		for case in ${CASES:-idle load}; do
			one $r $agent $case
		done
	done
	r=$(( r + 1 ))
done
kill $SLEEPERS
wait $SLEEPERS
pass
