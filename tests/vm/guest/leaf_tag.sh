#!/bin/sh
# Tags follow the task's own (leaf) cgroup, not the nearest cgroup with the
# cpu controller (issue 9, finding 6). par has the cpu controller, its
# children do not; par/leaf is tagged, par/other is not.
. /opt/chameleon/guest/lib.sh

make_cgroup par
make_cgroup par/leaf
make_cgroup par/other
[ -z "$(cat /sys/fs/cgroup/par/cgroup.subtree_control)" ] || fail "par has controllers for its children"
start_agent --events --tag par/leaf=level:1,tax:1
spin -g /sys/fs/cgroup/par/leaf $LONG >/dev/null &
a=$!
wait_log "DEBUG assign pid=$a cpus=\[0, 1\]" 3000 "the task in the tagged leaf got no object"
wait_log "fuse cpu=0 pid=$a " 3000 "the task in the tagged leaf never fused"
ok "task in par/leaf (no cpu controller of its own) got {0,1} and fused"
# A move between siblings under one cpu cgroup: no cgroup_move call at all.
echo $a >/sys/fs/cgroup/par/other/cgroup.procs || fail "move failed"
wait_log "DEBUG unassign pid=$a " 3000 "moved to the untagged par/other, it kept its object"
ok "moved to par/other (untagged): object withdrawn"
t=$(grep -c "DEBUG assign pid=$a" "$AGENT_LOG")
echo $a >/sys/fs/cgroup/par/leaf/cgroup.procs || fail "move back failed"
sleep 2
[ "$(grep -c "DEBUG assign pid=$a" "$AGENT_LOG")" -gt "$t" ] || fail "moved back to par/leaf, no object"
ok "moved back to par/leaf: object again"
end_tasks $a
stop_agent
pass
