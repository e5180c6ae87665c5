#!/bin/sh
# `scx_chameleon events`: the running scheduler's events streamed through the
# control socket, as JSON lines and as text; the stream ends when the agent does.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
scx_chameleon tag seq --level 1 >/dev/null || fail "tag failed"
start_agent
scx_chameleon events --json >/tmp/ev.json 2>/tmp/ev.err &
j=$!
scx_chameleon events >/tmp/ev.txt 2>&1 &
t=$!
sleep 0.5
spin -g /sys/fs/cgroup/seq 2 >/dev/null
sleep 0.5
grep -q '"kind":"fuse"' /tmp/ev.json || fail "no fuse in the JSON stream: $(head -c 300 /tmp/ev.json)"
grep -q '"kind":"demand"' /tmp/ev.json || fail "no demand in the JSON stream"
grep -q "^ *fuse cpu=0 pid=[0-9]* cgroup=[0-9]* cpus=0,1 " /tmp/ev.txt || fail "no fuse line in the text stream: $(head -c 300 /tmp/ev.txt)"
ok "streamed $(grep -c . /tmp/ev.json) events as JSON, e.g. $(grep -m1 '"kind":"fuse"' /tmp/ev.json | cut -c1-120)"
stop_agent
wait $j || fail "events --json did not exit 0 when the agent stopped"
wait $t
grep -q "the scheduler stopped" /tmp/ev.err || fail "no note that the scheduler stopped"
ok "the stream ended with the agent: $(cat /tmp/ev.err)"
out=$(scx_chameleon events 2>&1) && fail "events without an agent succeeded"
ok "no agent: $out"
pass
