#!/bin/sh
# Monitoring the scx way: the counters on the scx_stats socket, read by
# `scx_chameleon --monitor N`, and as OpenMetrics by `scx_chameleon metrics`.
. /opt/chameleon/guest/lib.sh

make_cgroup seq
start_agent --tag seq=level:1
spin -g /sys/fs/cgroup/seq 3 >/dev/null
sleep 1.5	# counters are published each second
[ -S /var/run/scx/root/stats ] || fail "no scx_stats socket at /var/run/scx/root/stats"
scx_chameleon --monitor 0.5 >/tmp/mon 2>&1 &
m=$!
sleep 1.5
kill $m
grep -q '"fuse":[1-9]' /tmp/mon || fail "--monitor shows no fuse: $(head -c 300 /tmp/mon)"
ok "--monitor: $(tail -n 1 /tmp/mon | cut -c1-150)"
scx_chameleon metrics >/tmp/om || fail "metrics failed: $(cat /tmp/om)"
grep -q "^# TYPE chameleon_fuse counter$" /tmp/om || fail "no TYPE line: $(head /tmp/om)"
grep -q "^chameleon_fuse_total [1-9]" /tmp/om || fail "no fuse count: $(head /tmp/om)"
[ "$(tail -n 1 /tmp/om)" = "# EOF" ] || fail "OpenMetrics text does not end with # EOF"
ok "metrics: $(grep -c '^# TYPE' /tmp/om) counters, $(grep '^chameleon_fuse_total' /tmp/om)"
stop_agent
out=$(scx_chameleon metrics 2>&1) && fail "metrics without a scheduler succeeded"
ok "no scheduler: $out"
pass
