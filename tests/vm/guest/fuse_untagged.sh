#!/bin/sh
# Cluster scheduling (3): an untagged parallel load never fuses (a tag exists,
# on a cgroup the load is not in). Positive control in the same boot: a task
# in the tagged cgroup then does fuse, so the check could see a fuse at all.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
start_agent --events --stats 2 --tag seq=level:2,tax:0.01
stress-ng --cpu "$(nproc)" --pipe 1 --timeout 10 >/tmp/stress.log 2>&1 || fail "stress-ng failed"
n=$(grep -cE "^event  *(demand|fuse|partial_fuse|split) " "$AGENT_LOG")
[ "$n" = 0 ] || fail "$n demand/fuse/split events for an untagged load"
ok "no object events during 10 s of untagged stress-ng"

spin -g /sys/fs/cgroup/seq 3 >/dev/null &
a=$!
wait $a || fail "spin failed"
stop_agent
n=$(grep -cE "^event  *(fuse|partial_fuse) .* pid=$a " "$AGENT_LOG")
[ "$n" -ge 1 ] || fail "positive control: the tagged task did not fuse either"
grep -q "^summary .* fuse=[1-9]" "$AGENT_LOG" || fail "counters show no fuse: $(grep '^summary' "$AGENT_LOG")"
ok "positive control: the tagged pid $a fused $n times; $(grep '^summary' "$AGENT_LOG")"
pass
