#!/bin/sh
# The smoke subset, in one boot, for the kernel matrix (tests/run runs it on
# every kernel of SMOKE_KVERS and on KVER): attach (and the verifier's
# instruction count against the one recorded for this kernel), fuse (alone:
# at least 90 % of its run time by our count; by the kernel's, it runs on its
# representative and the lent CPU idles), tax ordering (tax 0.01 fuses a
# clearly larger share than tax 100 against a competitor pinned to CPU 1, by
# our count and by the time CPU 1 runs no task), tags (a cgroup tagged live:
# a task in it fuses), hotplug under load, SIGTERM. Never loads the module.
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
# The budget, on every kernel: 50,000 instructions (issue 46). The record
# is what this kernel took when it was last re-recorded, for the diff.
ceiling=50000
ok "verifier: $total instructions on $kver, recorded $recorded, budget $ceiling"
[ "$total" -le "$ceiling" ] || fail "verifier: $total instructions > the budget of $ceiling (recorded $recorded)"

# fused_share PID: fused share in % of a tagged task's run time, from its
# task_exit event (waits for it).
fused_share() {
	wait_log "task_exit .* pid=$1 .*tagged run_ns=" 3000 "no task_exit event for pid $1"
	fused_pct "$1"
}

# --- fuse: alone on an idle VM ------------------------------------------------
# Our count (task_exit: fused share of A's run time) and the kernel's, over a
# 3 s window while A is fused on {0,1}: A runs all the time, on CPU 0 (CPU 0's
# idle + A's schedstat add up to the window, so A did not run elsewhere), and
# lent CPU 1 idles (nothing but its kthreads may run there).
spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
a=$!
wait_log "fuse cpu=0 pid=$a .*cpus=0,1 " 5000 "pid $a did not fuse on cpus 0,1"
pre=$(run_ns $a)
shares r 3000 $a cpu0 cpu1
set -- $r
end_tasks $a
pct=$(fused_share $a)
get tt task_times $a
after=$(echo $tt | awk -v pre=$pre '{ printf "%d", $2 * 100 / ($1 - pre) }')
ok "fuse: pid $a fused $pct% of its run time, at least $after% of it after its first fuse ($tt ns run/fused, $(( pre / 1000000 )) ms run when the fuse was seen); kernel, 3 s fused: A ran $1 ‰, CPU 0 idle $2 ‰, CPU 1 idle $3 ‰"
[ "$pct" -le 100 ] || fail "fused $pct% of its run time: fused time > run time"
# What is not fused of A's run is its start up to its first fuse (the
# agent's assignment round trip): 94-98 % fused of a 3-4 s run on the four
# kernels. After the fuse A stays fused: its run time when the log showed
# the fuse bounds the time before from above, so the share of the rest reads
# 101-108 %. 90 % fails if a tenth of A's fused run is lost; the kernel's
# figures (A 982-1003 ‰, lent CPU 1 idle 985-1001 ‰ measured) get the same
# tenth.
[ "$after" -ge 90 ] || fail "fused only $after% (< 90%) of its run after its first fuse, alone on an idle VM"
[ "$1" -ge 900 ] || fail "fuse: A, always runnable, ran only $1 ‰ of the window"
accounts_for "fuse: CPU 0 (A's representative)" "$2" "$1"
[ "$3" -ge 900 ] || fail "fuse: lent CPU 1 idle only $3 ‰ of the window (A fused $pct% by our count)"

# --- tax ordering: A tagged, B pinned to CPU 1 --------------------------------
# B is always runnable on CPU 1, so CPU 1 runs nothing only while it is lent
# to A: the rest of the window after what the kernel accounts as run on
# CPU 1 is the time it was lent, and must agree with our fused share and
# order the taxes as it does. Run on CPU 1: the larger of B's schedstat and
# CPU 1's rq_cpu_time (run1), which counts the agent, the shell and kthreads
# there too but only as each task leaves the CPU (B renewed for a whole
# window reads low). Not /proc/stat's idle: on 6.16-7.0 a
# lent CPU's idle sometimes stops accruing for most of the window while B
# waits there (idle + B came to 183-362 per mille in 7 of 12 runs), which
# says nothing about lending; it is printed, not asserted.
# The kernel's side of lending is asserted at the end (late), after tags,
# hotplug and SIGTERM, so that those run whatever it finds.
late=
for tax in 100 0.01; do
	scx_chameleon tag seq --tax $tax >/dev/null || fail "cannot set tax $tax"
	spin -c 1 $LONG >/dev/null &
	b=$!
	sleep 0.3
	spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
	a=$!
	wait_log "DEBUG assign pid=$a .* tax=$(printf %.2f $tax)" 5000 "A (pid $a) was not assigned with tax $tax"
	shares r 3000 $b cpu1 run1
	set -- $r
	end_tasks $a $b
	pct=$(fused_share $a)
	busy=$3; [ "$1" -gt "$busy" ] && busy=$1
	lent=$(( 1000 - busy ))
	ok "tax $tax: A fused $pct% with B on CPU 1; kernel, 3 s: CPU 1 ran tasks $3 ‰ (B $1 ‰), so lent $lent ‰; /proc/stat idle $2 ‰"
	[ "$pct" -le 100 ] || fail "tax $tax: fused $pct% of its run time: fused time > run time"
	# Lent time is time CPU 1 runs nothing: our fused share and it agree
	# within 15 points (as in fuse_tax; A's life is the window and a few
	# hundred ms before and after it).
	d=$(( lent / 10 - pct )); [ $d -lt 0 ] && d=$(( -d ))
	[ "$d" -le 15 ] || late="$late; tax $tax: A fused $pct% by our count but CPU 1 ran nothing $lent ‰"
	t=$(echo $tax | tr . _)
	eval "pct_$t=$pct lent_$t=$lent"
done
[ "$pct_0_01" -ge $(( pct_100 + 25 )) ] ||
	fail "tax ordering: fused $pct_0_01% at tax 0.01, not clearly above $pct_100% at tax 100"
ok "tax ordering (our count): $pct_100% at tax 100 < $pct_0_01% at tax 0.01"
[ "$lent_0_01" -ge $(( lent_100 + 250 )) ] ||
	late="$late; tax ordering: CPU 1 ran nothing $lent_0_01 ‰ at tax 0.01, not clearly above $lent_100 ‰ at tax 100"

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
[ -z "$late" ] || fail "lent CPU 1: the kernel's accounting disagrees with lending${late}"
ok "the kernel's accounting of the lent CPU: its run time is B's, the rest follows our fused share, tax 0.01 lends it $lent_0_01 ‰ against $lent_100 ‰ at tax 100"
pass
