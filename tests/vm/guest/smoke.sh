#!/bin/sh
# The smoke subset, in one boot, for the kernel matrix (tests/run runs it on
# every kernel of SMOKE_KVERS and on KVER): attach (and the verifier's
# instruction count against the one recorded for this kernel), fuse (share of
# run time clearly above 0 and at most 100 %), tax ordering (tax 0.01 fuses a
# clearly larger share than tax 100 against a competitor on CPU 1), tags (a
# cgroup tagged live: a task in it fuses), hotplug under load, SIGTERM.
# Never loads the module: it is built for the primary kernel only.
. /opt/chameleon/guest/lib.sh

kver=$(uname -r)
echo "smoke: kernel $kver"
make_cgroup seq
make_cgroup live

# The agent applies tags stored before it starts.
scx_chameleon tag seq --level 1 --tax 1 >/dev/null || fail "cannot tag seq"

# --- attach, verifier instruction count ---------------------------------------
t0=$(now_ms)
start_agent --events
ok "attach took $(( $(now_ms) - t0 )) ms"
wait_log "^verifier: total_insns=" 2000 "the agent printed no verifier line"
line=$(grep -m1 "^verifier: total_insns=" "$AGENT_LOG")
echo "$line"
total=$(echo "$line" | sed -n 's/^verifier: total_insns=\([0-9]*\).*/\1/p')
recorded=$(awk -v k="$kver" '$1 == k { print $2 }' /opt/chameleon/verifier_insns)
[ -n "$recorded" ] || fail "no verifier count recorded for $kver in tests/vm/verifier_insns (this run: $total)"
ceiling=$(( recorded * 125 / 100 ))
ok "verifier: $total instructions on $kver, recorded $recorded, ceiling $ceiling"
[ "$total" -le "$ceiling" ] || fail "verifier: $total instructions > $ceiling (recorded $recorded x 1.25)"

# fused_share PID: fused share in % of a tagged task's run time, from its
# task_exit event (waits for it).
fused_share() {
	wait_log "task_exit .* pid=$1 .*tagged run_ns=" 3000 "no task_exit event for pid $1"
	fused_pct "$1"
}

# --- fuse: alone on an idle VM ------------------------------------------------
spin -g /sys/fs/cgroup/seq 5 >/dev/null &
a=$!
wait $a || fail "spin failed"
pct=$(fused_share $a)
ok "fuse: pid $a fused $pct% of its run time ($(task_times $a) ns run/fused)"
grep -q "fuse cpu=0 pid=$a .*cpus=0,1 " "$AGENT_LOG" || fail "no fuse event on cpus 0,1"
[ "$pct" -le 100 ] || fail "fused $pct% of its run time: fused time > run time"
[ "$pct" -ge 60 ] || fail "fused only $pct% (< 60%) alone on an idle VM"

# --- tax ordering: A tagged, B pinned to CPU 1 --------------------------------
for tax in 100 0.01; do
	scx_chameleon tag seq --tax $tax >/dev/null || fail "cannot set tax $tax"
	spin -c 1 5.5 >/dev/null &
	b=$!
	sleep 0.3
	spin -g /sys/fs/cgroup/seq 5 >/dev/null &
	a=$!
	wait $a || fail "A failed (tax $tax)"
	wait $b || fail "B failed (tax $tax)"
	grep -q "^assign pid=$a .* tax=$(printf %.2f $tax)" "$AGENT_LOG" || fail "A (pid $a) was not assigned with tax $tax"
	pct=$(fused_share $a)
	ok "tax $tax: A fused $pct% with B on CPU 1"
	[ "$pct" -le 100 ] || fail "tax $tax: fused $pct% of its run time: fused time > run time"
	eval "pct_$(echo $tax | tr . _)=$pct"
done
[ "$pct_0_01" -ge $(( pct_100 + 25 )) ] ||
	fail "tax ordering: fused $pct_0_01% at tax 0.01, not clearly above $pct_100% at tax 100"
ok "tax ordering: $pct_100% at tax 100 < $pct_0_01% at tax 0.01"

# --- tags: a cgroup tagged while the agent runs --------------------------------
out=$(scx_chameleon tag live --level 1 --tax 1) || fail "tag live: $out"
echo "$out" | grep -q "applied by the running scheduler" || fail "not applied live: $out"
spin -g /sys/fs/cgroup/live 3 >/dev/null &
a=$!
wait_log "fuse cpu=[0-9]* pid=$a cgroup=$(stat -c %i /sys/fs/cgroup/live) " 3000 "pid $a of the live-tagged cgroup did not fuse"
wait $a || fail "spin failed"
ok "tags: 'scx_chameleon tag live' applied live, pid $a in it fused"

# --- hotplug: offline/online cpu3 under load ----------------------------------
seq0=$(cat /sys/kernel/sched_ext/hotplug_seq)
stress-ng --cpu "$(nproc)" --timeout 6 >/tmp/stress.log 2>&1 &
load=$!
sleep 1
echo 0 >/sys/devices/system/cpu/cpu3/online || fail "cannot offline cpu3"
sleep 1
[ "$(state)" = enabled ] || fail "state '$(state)' with cpu3 offline"
echo 1 >/sys/devices/system/cpu/cpu3/online || fail "cannot online cpu3"
sleep 1
[ "$(state)" = enabled ] || fail "state '$(state)' after cpu3 came back"
ops_is_chameleon || fail "root/ops '$(ops)' after hotplug"
agent_alive || fail "agent exited after hotplug"
wait "$load" || fail "stress-ng failed under hotplug"
seq1=$(cat /sys/kernel/sched_ext/hotplug_seq)
[ "$seq1" != "$seq0" ] || fail "hotplug_seq unchanged ($seq0)"
ok "hotplug: cpu3 offline/online under load, still enabled, hotplug_seq $seq0 -> $seq1"

# --- SIGTERM ------------------------------------------------------------------
stop_agent
grep -q "event  *cpu_offline cpu=3" "$AGENT_LOG" || fail "agent saw no cpu_offline event"
pass
