#!/bin/sh
# (c) SIGTERM: the agent detaches, reports why, exits 0; sched_ext is disabled.
. /opt/chameleon/guest/lib.sh

start_agent
sleep 2
stop_agent
grep -q "unregistered from user space" "$AGENT_LOG" || fail "exit reason not reported"
ok "exit info: $(grep EXIT "$AGENT_LOG")"
# A second load after a clean exit must work (nothing left behind).
start_agent
stop_agent
pass
