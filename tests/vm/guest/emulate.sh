#!/bin/sh
# Duty-cycle emulation (kmod_proxy, --emulate high: Chameleon Table 2), from
# the kernel's accounting: each spinner's CPU time (/proc/PID/schedstat) as
# a share of the window. Each CPU's busy share in /proc/stat over the same
# window is shown, not asserted: the kernel counts injected idle partly as
# idle and partly as the injection thread's system time (a CPU whose spinner
# got 43 % showed 65 % busy there).
# Shares are relative to a baseline measured first in the same boot (a
# spinner on that CPU with neither the scheduler nor the emulation: 99 %):
# - a spinner on a plain CPU gets 50 +- 5 % of it;
# - a task fused at level 1 (2 CPUs) gets 75 +- 5 % of its representative,
#   and the object stays fused through the injected idle periods (the
#   injection thread is a higher class: before cpu_release told it apart,
#   each one split the object: 113 splits in 4 s, the task got 52 %);
# - at level 2 (4 CPUs) it gets the whole representative: at least 93 %
#   (95-97 % measured; the representative also runs the policy's timers and
#   its lent CPUs' share of kernel work);
# - after the agent's exit no CPU idles any more.
# 6 CPUs (3 cores x 2 threads): an object of 4 and a plain CPU beside it.
. /opt/chameleon/guest/lib.sh

# Measured on isolated CPUs, as any benchmark of a CPU's speed is: the test
# shell, the agent, unbound workqueues and every kthread that may move live
# on CPU 4, so that what runs on CPUs 0-3 and 5 is the spinners (and per-CPU
# kthreads), and device interrupts go to CPU 4 too. Otherwise every wakeup that lands on the representative takes
# it from its owner and splits the object, whatever the emulation does.
house=0x10
taskset -p $house $$ >/dev/null || fail "cannot pin the test shell"
echo 10 >/sys/devices/virtual/workqueue/cpumask || fail "cannot move unbound workqueues"
for d in /proc/[0-9]*; do taskset -p $house "${d#/proc/}" >/dev/null 2>&1; done
for d in /proc/irq/[0-9]*; do echo 4 >"$d/smp_affinity_list" 2>/dev/null; done

# Baselines, side by side in this run (TCG takes its own share of a CPU for
# interrupts and timers): what a spinner gets of CPUs 0 and 5 with neither
# the scheduler nor the emulation. Shares below are relative to these.
taskset 0x1 spin $LONG >/dev/null &
b0=$!
spin -c 5 $LONG >/dev/null &
b5=$!
sleep 1
shares r 3000 $b0 $b5
set -- $r
base0=$1 base5=$2
kill $b0 $b5
ok "baselines without scheduler or emulation: a spinner gets $base0 ‰ of CPU 0, $base5 ‰ of CPU 5"
[ "$base0" -ge 500 ] && [ "$base5" -ge 500 ] || fail "baselines too low to compare with"

insmod /opt/chameleon/chameleon_proxy.ko || fail "insmod failed"
make_cgroup seq
start_agent --events --emulate high
grep -q "processor proxies on" "$AGENT_LOG" || fail "the policy did not bind the module's kfuncs"

# The plain CPU: the last one, which no object of 2 or 4 here includes.
plain=5
spin -c $plain $LONG >/dev/null &
p=$!
scx_chameleon tag seq --level 1 --tax 0.01 >/dev/null || fail "tag seq"
taskset 0x1 spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
a=$!

# measure SECONDS: sets M="REP_BUSY PLAIN_BUSY A_REL P_REL SPLITS A_PM P_PM"
# over one window: busy per mille of the representative and of the plain CPU
# (1000 - their idle time: shown only); each spinner's CPU time in per mille
# of the window (schedstat, read with the clock and the idle counters in one
# process: cpu_share), raw (_PM) and relative to its CPU's baseline (_REL);
# splits of a's object. Runs in this shell (not in $( )), so that a reading
# that fails fails the test.
measure() {
	grep "^cpu$rep " /proc/stat >/tmp/stat.a
	s0=$(grep -c "^event  *split .*pid=$a " "$AGENT_LOG")
	shares m $(( $1 * 1000 )) $a $p "cpu$rep" "cpu$plain"
	set -- $m
	grep "^cpu$rep " /proc/stat >/tmp/stat.b
	s1=$(grep -c "^event  *split .*pid=$a " "$AGENT_LOG")
	M="$(( 1000 - $3 )) $(( 1000 - $4 )) $(( $1 * 1000 / base0 )) $(( $2 * 1000 / base5 )) $(( s1 - s0 )) $1 $2"
}

# within WHAT VALUE LOW HIGH (per mille)
within() {
	[ "$2" -ge "$3" ] && [ "$2" -le "$4" ] || fail "$1: $2 ‰ (want $3-$4 ‰)"
}

wait_log "^event  *fuse .*pid=$a .*cpus=[0-9]*,[0-9]* " 20000 "no level-1 fuse of pid $a"
rep=$(sed -n "s/^event  *fuse .*pid=$a .*cpus=\([0-9]*\),.*/\1/p" "$AGENT_LOG" | tail -n 1)
[ "$rep" != $plain ] || fail "the object took the plain CPU $plain"
sleep 2	# the module corrects each CPU's idle periods over a few 200 ms windows
measure 4
set -- $M
ok "level 1 on CPU $rep: representative busy $1 ‰, plain CPU $plain busy $2 ‰; schedstat: fused task $6 ‰ of the window = $3 ‰ of its baseline, plain spinner $7 ‰ = $4 ‰ of its baseline; $5 splits"
scx_chameleon status | grep "^module:" | sed 's/^/   /'
grep "^event  *split .*pid=$a " "$AGENT_LOG" | sed 's/.*reason=\([a-z]*\).*/\1/' | sort | uniq -c | sed 's/^/   splits: /'
proxy_ctl stats | grep -E "^cpu=($rep|$plain) " | sed 's/^/   /'
scx_chameleon status | grep -o "kthread_kept=[0-9]*" | sed 's/^/   policy: objects kept through a bound kthread (injected idle, stopper): /'
within "plain spinner's schedstat share (duty 50 %)" "$4" 450 550
within "fused task's schedstat share (level 1, duty 75 %)" "$3" 700 800
l1=$3 plain1=$4
# Before cpu_release told injected idle apart, every idle period split it:
# 113 splits in 4 s.
[ "$5" -le 5 ] || fail "the level-1 object split $5 times in 4 s (injected idle must not split it)"

scx_chameleon tag seq --level 2 --tax 0.01 >/dev/null || fail "retag seq 2"
wait_log "^event  *fuse .*pid=$a .*cpus=[0-9]*,[0-9]*,[0-9]*,[0-9]* " 20000 "no level-2 fuse of pid $a"
rep=$(sed -n "s/^event  *fuse .*pid=$a .*cpus=\([0-9]*\),[0-9]*,[0-9]*,[0-9]* .*/\1/p" "$AGENT_LOG" | tail -n 1)
sleep 2
measure 4
set -- $M
ok "level 2 on CPU $rep: representative busy $1 ‰, plain CPU $plain busy $2 ‰; schedstat: fused task $6 ‰ = $3 ‰ of its baseline, plain spinner $7 ‰ = $4 ‰; $5 splits"
proxy_ctl stats | grep -E "^cpu=($rep|$plain) " | sed 's/^/   /'
paste -d' ' /tmp/stat.a /tmp/stat.b | awk '{ printf "   /proc/stat cpu%s over the window (jiffies): user %d nice %d system %d idle %d iowait %d irq %d softirq %d\n", substr($1, 4), $13-$2, $14-$3, $15-$4, $16-$5, $17-$6, $18-$7, $19-$8 }'
within "fused task's schedstat share (level 2, duty 100 %)" "$3" 930 1050
within "plain spinner's schedstat share (duty 50 %)" "$4" 450 550
# Chameleon Fig. 5's ordering, from the kernel's accounting: fused 4 > fused 2 > native.
[ "$3" -gt "$l1" ] && [ "$l1" -gt "$plain1" ] && [ "$l1" -gt "$4" ] ||
	fail "shares (per mille of baseline): level 2 $3, level 1 $l1, plain $plain1 / $4: want level 2 > level 1 > plain"
ok "ordering holds: level 2 $3 > level 1 $l1 > plain $plain1, $4 (per mille of baseline)"

kill $a $p
stop_agent
proxy_ctl stats | grep -q "^emulate_on=0$" || fail "emulation still on after the agent exited"
spin -c $plain 30 >/dev/null &
p=$!
sleep 1
shares b 2000 $p
kill $p
[ "$b" -ge 950 ] || fail "a spinner on CPU $plain got $b ‰ after the agent exited"
ok "agent gone: emulation off, a spinner on CPU $plain gets $b ‰"
pass
