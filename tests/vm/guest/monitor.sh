#!/bin/sh
# Monitoring the scx way: the counters on the scx_stats socket, read by
# `scx_chameleon --monitor N` (JSON lines with --monitor-json), and as
# OpenMetrics by `scx_chameleon metrics`, with the kernel's own sched_ext
# event counters (/sys/kernel/sched_ext/root/events) among them; and a
# --monitor that outlives an agent restart: it says once that nothing is
# running, keeps retrying, and its lines resume when the agent is back.
. /opt/chameleon/guest/lib.sh

EVENTS=/sys/kernel/sched_ext/root/events
make_cgroup seq
start_agent --tag seq=level:1
spin -g /sys/fs/cgroup/seq 3 >/dev/null
sleep 1.5	# counters are published each second
[ -S /var/run/scx/root/stats ] || fail "no scx_stats socket at /var/run/scx/root/stats"
scx_chameleon --monitor 0.5 --monitor-json >/tmp/mon 2>&1 &
m=$!
sleep 1.5
kill $m
grep -q '"fuse":[1-9]' /tmp/mon || fail "--monitor-json shows no fuse: $(head -c 300 /tmp/mon)"
ok "--monitor-json: $(tail -n 1 /tmp/mon | cut -c1-150)"
scx_chameleon metrics >/tmp/om || fail "metrics failed: $(cat /tmp/om)"
grep -q "^# TYPE chameleon_fuse counter$" /tmp/om || fail "no TYPE line: $(head /tmp/om)"
grep -q "^chameleon_fuse_total [1-9]" /tmp/om || fail "no fuse count: $(head /tmp/om)"
[ "$(tail -n 1 /tmp/om)" = "# EOF" ] || fail "OpenMetrics text does not end with # EOF"
ok "metrics: $(grep -c '^# TYPE' /tmp/om) families, $(grep '^chameleon_fuse_total' /tmp/om)"

# The kernel's event counters: as many in the metrics as the kernel lists,
# each between the file read just before and just after (the agent reads it
# when asked, so a counter cannot lag).
[ -r "$EVENTS" ] || fail "no $EVENTS on this kernel"
cat "$EVENTS" >/tmp/ev0
scx_chameleon metrics >/tmp/om2 || fail "metrics failed: $(cat /tmp/om2)"
cat "$EVENTS" >/tmp/ev1
[ "$(grep -c '^# TYPE chameleon_kernel_events counter$' /tmp/om2)" = 1 ] ||
	fail "no single TYPE line for chameleon_kernel_events: $(grep kernel_events /tmp/om2 | head -3)"
kernel=$(grep -c '^SCX_EV_' /tmp/ev0)
listed=$(grep -c '^chameleon_kernel_events_total{event="' /tmp/om2)
[ "$kernel" -gt 0 ] || fail "the kernel lists no events: $(head -3 /tmp/ev0)"
[ "$listed" = "$kernel" ] || fail "metrics list $listed kernel events, the kernel $kernel"
check=$(awk '
	FILENAME == "/tmp/ev0" { n = tolower($1); sub(/^scx_ev_/, "", n); lo[n] = $2; next }
	FILENAME == "/tmp/ev1" { n = tolower($1); sub(/^scx_ev_/, "", n); hi[n] = $2; next }
	/^chameleon_kernel_events_total\{event="/ {
		split($0, a, "\""); e = a[2]; v = $NF
		if (!(e in lo) || v + 0 < lo[e] + 0 || v + 0 > hi[e] + 0) bad = bad " " e "=" v " (kernel " lo[e] ".." hi[e] ")"
		else if (v + 0 > 0) nz = nz " " e "=" v
	}
	END { if (bad != "") { print "BAD" bad; exit 1 } print "non-zero:" (nz == "" ? " none" : nz) }
' /tmp/ev0 /tmp/ev1 /tmp/om2) || fail "kernel events out of step with $EVENTS:$check"
ok "metrics: $listed kernel event counters, each between the kernel file read before and after; $check"

# --monitor across a restart of the agent.
spin -g /sys/fs/cgroup/seq 60 >/dev/null &
s=$!
scx_chameleon --monitor 0.5 >/tmp/mon2 2>&1 &
m=$!
# count_lines PATTERN: lines of /tmp/mon2 matching PATTERN.
count_lines() { grep -c "$1" /tmp/mon2; }
# wait_mon PATTERN N WHAT: until N lines match (10 s).
wait_mon() {
	t0=$(now_ms)
	until [ "$(count_lines "$1")" -ge "$2" ]; do
		[ $(( $(now_ms) - t0 )) -lt 10000 ] || fail "$3: $(tail -n 5 /tmp/mon2)"
		usleep 100000
	done
}
wait_mon '^[0-9:]* fuse [0-9]* (+[0-9.]*/s) ' 2 "--monitor prints no human-readable line with rates"
ok "--monitor: $(grep ' fuse [0-9]* (+' /tmp/mon2 | tail -n 1 | cut -c1-160)"
stop_agent
wait_mon '^scx_chameleon not running, retrying$' 1 "--monitor did not say the scheduler is gone"
sleep 3	# a dozen retries
kill -0 $m 2>/dev/null || fail "--monitor exited when the agent stopped: $(tail -n 3 /tmp/mon2)"
[ "$(count_lines 'not running')" = 1 ] || fail "said 'not running' $(count_lines 'not running') times in one outage"
ok "agent stopped: --monitor said 'scx_chameleon not running, retrying' once in 3 s and kept running"
start_agent --tag seq=level:1
# Lines after the notice: the first (a new agent's totals), then rates again.
t0=$(now_ms)
until sed '1,/not running/d' /tmp/mon2 | grep -q ' fuse [0-9]* (+'; do
	[ $(( $(now_ms) - t0 )) -lt 10000 ] || fail "--monitor lines did not resume: $(tail -n 3 /tmp/mon2)"
	usleep 100000
done
kill $m
ok "agent back: --monitor resumed: $(sed '1,/not running/d' /tmp/mon2 | grep ' fuse [0-9]* (+' | head -n 1 | cut -c1-120)"
kill $s 2>/dev/null
stop_agent
out=$(scx_chameleon metrics 2>&1) && fail "metrics without a scheduler succeeded"
ok "no scheduler: $out"
pass
