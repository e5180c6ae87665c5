#!/bin/sh
# (d) kill -9 of the agent: the kernel disables the scheduler by itself (the
# struct_ops link dies with the process) and the load, moved back to the fair
# class, still completes. Asserted: it happens (within a generous 30 s, a
# liveness bound, not a timing); how fast is printed here and measured with
# repeats in bench/liveness_times.
. /opt/chameleon/guest/lib.sh

start_agent
stress-ng --cpu "$(nproc)" --timeout 10 >/tmp/stress.log 2>&1 &
load=$!
sleep 3
out=$(sched_state disabled 30000 "$AGENT_PID") || fail "still '$(state)' 30 s after kill -9 ($out)"
us=${out##*after_us=}
ok "disabled $((us / 1000)).$((us % 1000 / 100)) ms after kill -9 (printed, not asserted)"
wait "$load" || { cat /tmp/stress.log; fail "stress-ng failed after the scheduler died"; }
grep -q "successful run completed" /tmp/stress.log || fail "load did not complete"
ok "load completed on the fair class"
pass
