#!/bin/sh
# Cluster scheduling (3): an untagged parallel load never fuses (a tag exists,
# on a cgroup the load is not in).
. /opt/chameleon/guest/lib.sh

make_cgroup seq
start_agent --events --stats 2 --tag seq=level:2,tax:0.01
stress-ng --cpu "$(nproc)" --pipe 1 --timeout 10 >/tmp/stress.log 2>&1 || fail "stress-ng failed"
stop_agent
n=$(grep -cE "^event  *(demand|fuse|partial_fuse|split) " "$AGENT_LOG")
[ "$n" = 0 ] || fail "$n demand/fuse/split events for an untagged load"
grep -q "^summary .* fuse=0 partial=0 denied=0 split=0" "$AGENT_LOG" || fail "counters show fusing: $(grep '^summary' "$AGENT_LOG")"
ok "no object events; $(grep '^summary' "$AGENT_LOG")"
pass
