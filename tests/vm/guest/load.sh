#!/bin/sh
# (a) Under stress-ng on every CPU for 20 s, sched_ext stays enabled with our
# ops, and the load completes.
. /opt/chameleon/guest/lib.sh

start_agent --stats 5
ncpu=$(nproc)
stress-ng --cpu "$ncpu" --timeout 20 --metrics-brief >/tmp/stress.log 2>&1 &
load=$!
t0=$(now_ms)
samples=0
while kill -0 "$load" 2>/dev/null; do
	[ "$(state)" = enabled ] || fail "state '$(state)' during load (after $samples s)"
	ops_is_chameleon || fail "root/ops '$(ops)' during load"
	agent_alive || fail "agent died during load"
	samples=$((samples + 1))
	sleep 1
done
secs=$(( ($(now_ms) - t0) / 1000 ))
wait "$load" || { cat /tmp/stress.log; fail "stress-ng failed"; }
grep -q "successful run completed" /tmp/stress.log || { cat /tmp/stress.log; fail "stress-ng did not complete"; }
[ "$secs" -ge 20 ] || fail "load ended after $secs s, expected >= 20"
[ "$samples" -ge 10 ] || fail "only $samples samples taken during the load"
ok "enabled with chameleon ops in all $samples samples of a ${secs}s $ncpu-CPU load"
stop_agent
grep -q "^summary " "$AGENT_LOG" || fail "agent printed no summary"
ok "$(grep '^summary ' "$AGENT_LOG")"
pass
