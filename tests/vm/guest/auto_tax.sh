#!/bin/sh
# Automatic tax (tax=auto): the agent measures each task's progress fused and
# native and sets its tax from the speed-up. Under the duty-cycle emulation
# (--emulate high: a plain CPU runs 50 % of the time, a level-1
# representative 75 %, a level-2 one 100 %), fusing speeds a CPU-bound task
# up by 1.5 or 2 per wall second, and a task that sleeps 1 ms per step not
# at all. Both report progress through include/chameleon_progress.h
# (tests/vm/tools/progress.c), each in a cgroup tagged `--tax auto`:
#   A, CPU-bound, one bump per loop, level 2 (4 CPUs, 2x): its tax stays at
#     or below 1.00 from start (1.00) to end, with a measured speed-up
#     above 1.5;
#   B, one bump per 1 ms sleep, level 1: its tax reaches 50 or more, with a
#     speed-up under 1.1; the time it took is reported. The controller's
#     bound, N = 10 s of its start (auto_tax.rs CONVERGE_S), is asserted by
#     the host tests on a simulated clock with the VM's noise; here the wait
#     ends at N + 10 s, a time this test does not assert: under TCG with
#     the host loaded the samples get noisier and the explorations more
#     (6.7-7.7 s alone, 10.2 s once in a fresh clone running two VMs).
# Both taxes are read from the agent's `autotax` lines and from `status`;
# the kernel's accounting (schedstat) says A ran more than a plain CPU's
# 50 % lets it (it ran fused), and B's native explorations are logged.
# TCG's speed drifts by tens of percent over seconds with the host's load,
# which made A's tax climb to 100 when native rates from its start were
# compared with fused ones 10 s later: each ratio is now paired in time
# (auto_tax.rs), and each task's paired ratios are printed.
# Why A gains 2x, not 1.5x: under TCG the 1.5x pair measured 1.43 pooled
# over 12 s, and its paired ratios (each +-12 %) sank to 1.12-1.22 for a
# stretch of one CI run; the controller then rightly raised its tax to 1.78
# (it puts tax 1 at 1.3). A test of "a gainer keeps a low tax" needs a gain
# that stays clear of that line whatever the host does: simulated with the
# VM's noise (auto_tax_tests.rs), a 1.5x gainer goes above 1.00 in 1-2 % of
# runs, a 1.35x one in 30 %, a 2x one in none.
# 8 CPUs (4 cores x 2 threads): A on CPU 0 (object {0-3}), B on CPU 4
# ({4,5}), CPUs 6-7 for everything else (the shell, the agent, kthreads
# that may move, IRQs), as a benchmark isolates the CPUs it measures: with
# the agent on B's lent CPU, B's fused share was neither mostly fused nor
# mostly native (25 s to a tax), and A, unpinned, ran natively on whichever
# CPU was not injecting idle just then, faster than one CPU at 50 %.
. /opt/chameleon/guest/lib.sh
N=10
house=0xc0
taskset -p $house $$ >/dev/null || fail "cannot pin the test shell"
echo c0 >/sys/devices/virtual/workqueue/cpumask || fail "cannot move unbound workqueues"
for d in /proc/[0-9]*; do taskset -p $house "${d#/proc/}" >/dev/null 2>&1; done
for d in /proc/irq/[0-9]*; do echo 6-7 >"$d/smp_affinity_list" 2>/dev/null; done

[ -d /dev/shm ] || mkdir /dev/shm
# (Every distribution mounts it; this initramfs does not.)
grep -q " /dev/shm " /proc/mounts || mount -t tmpfs tmpfs /dev/shm || fail "cannot mount /dev/shm"
insmod /opt/chameleon/chameleon_proxy.ko || fail "insmod failed"
make_cgroup auto
out=$(scx_chameleon tag auto --level 1 --tax auto) || fail "tag --tax auto: $out"
echo "$out" | grep -q "tax=auto" || fail "the stored tag has no tax=auto: $out"
ok "$out"
make_cgroup gain
out=$(scx_chameleon tag gain --level 2 --tax auto) || fail "tag --tax auto: $out"
echo "$out" | grep -q "level=2 tax=auto" || fail "the stored tag is not level 2, tax=auto: $out"
scx_chameleon tag auto --tax 0 >/tmp/bad 2>&1 && fail "tax 0 accepted"
grep -q 'tax "0": expected a number from 0.01 to 100 with at most two decimals, or auto' /tmp/bad ||
	fail "tax 0 refused without naming the field: $(cat /tmp/bad)"
# The controller's samples (debug) in the log, for when it fails.
start_agent --emulate high --log-level info,chameleon::agent::assign=debug,decisions=debug
grep -q "processor proxies on" "$AGENT_LOG" || fail "the policy did not bind the module's kfuncs"

# last_tax PID: the last tax the agent printed for PID, in hundredths.
last_tax() {
	sed -n "s/.*DEBUG autotax pid=$1 speedup=[^ ]* tax=\([0-9]*\)\.\([0-9]*\)$/\1\2/p" "$AGENT_LOG" | tail -n 1 | sed 's/^0*\(.\)/\1/'
}
last_speedup() {
	sed -n "s/.*DEBUG autotax pid=$1 speedup=\([^ ]*\) .*/\1/p" "$AGENT_LOG" | tail -n 1
}

taskset 0x1 progress -g /sys/fs/cgroup/gain spin $LONG >/tmp/a.out &
a=$!
ta=$(now_ms)
wait_log "DEBUG assign pid=$a " 10000 "A (pid $a) got no object"
taskset 0x10 progress -g /sys/fs/cgroup/auto sleep $LONG >/tmp/b.out &
b=$!
tb=$(now_ms)
wait_log "DEBUG assign pid=$b " 10000 "B (pid $b) got no object"
ok "A pid $a: $(grep "DEBUG assign pid=$a " "$AGENT_LOG" | tail -n 1); B pid $b: $(grep "DEBUG assign pid=$b " "$AGENT_LOG" | tail -n 1)"
grep -q "DEBUG assign pid=$a cpus=\[0, 1, 2, 3\]" "$AGENT_LOG" && grep -q "DEBUG assign pid=$b cpus=\[4, 5\]" "$AGENT_LOG" ||
	fail "A (on CPU 0) and B (on CPU 4) did not get {0-3} and {4,5}"

# samples PID: the controller's samples of PID, one line each: CPU time and
# progress per wall second, fused share, phase (from the debug log).
samples() {
	grep "autotax pid=$1 sample" "$AGENT_LOG" | sed 's/.*autotax pid=[0-9]* sample //' | awk '
		{ for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
		v["wall_us"] > 0 { printf "   cpu %3d %%  rate %7.0f/s  fused share %4.2f  %s\n", v["cpu_us"] * 100 / v["wall_us"],
			v["progress"] * 1e6 / v["wall_us"], (v["cpu_us"] > 0 ? v["fused_us"] / v["cpu_us"] : 0), v["phase"] }'
}

# pairs PID: the paired ratios the controller measured for PID (debug log).
pairs() {
	grep "autotax pid=$1 pair=" "$AGENT_LOG" | sed 's/.*pair=\([^ ]*\) .*/\1/' | tr '\n' ' '
}

# afail MSG: fail with both tasks' controllers in the output (CI keeps only
# that, not the agent's log).
afail() {
	echo "   A's autotax lines: $(grep "DEBUG autotax pid=$a " "$AGENT_LOG" | sed "s/.*DEBUG autotax pid=$a //" | tr '\n' '|')"
	echo "   A's paired ratios: $(pairs $a)"
	echo "   B's autotax lines: $(grep "DEBUG autotax pid=$b " "$AGENT_LOG" | sed "s/.*DEBUG autotax pid=$b //" | tr '\n' '|')"
	echo "   B's paired ratios: $(pairs $b)"
	fail "$@"
}

# B: 50 or more (by N + 10 s of its start, a wait, not the bound).
until [ "$(last_tax $b)" -ge 5000 ] 2>/dev/null; do
	[ $(( $(now_ms) - tb )) -lt $(( (N + 10) * 1000 )) ] ||
		afail "B's tax is $(last_tax $b) after $(( N + 10 )) s: $(grep "DEBUG autotax pid=$b " "$AGENT_LOG" | tr '\n' '|')"
	usleep 100000
done
took=$(( $(now_ms) - tb ))
ok "B: tax $(last_tax $b) (hundredths) $took ms after its start, speed-up $(last_speedup $b)"
grep "DEBUG autotax pid=$b " "$AGENT_LOG" | sed 's/^/   /'
echo "   B's paired ratios: $(pairs $b)"
echo "   B's first 50 samples:"
samples $b | head -n 50
grep -q "DEBUG autotax pid=$b explore=native" "$AGENT_LOG" || afail "B was never withdrawn for native samples"
grep -q "DEBUG autotax pid=$b source=file" "$AGENT_LOG" || afail "B's progress did not come from its counter file"

# A: measured for N s past its start and then 10 s more.
while [ $(( $(now_ms) - ta )) -lt $(( (N + 10) * 1000 )) ]; do usleep 200000; done
grep "DEBUG autotax pid=$a " "$AGENT_LOG" | sed 's/^/   /'
echo "   A's paired ratios: $(pairs $a)"
echo "   A's first 50 samples:"
samples $a | head -n 50
sa=$(last_speedup $a)
[ "$sa" != - ] && [ -n "$sa" ] || afail "A's speed-up was never measured"
# worst_a: A's highest tax so far, hundredths.
worst_a() {
	sed -n "s/.*DEBUG autotax pid=$a speedup=[^ ]* tax=\([0-9]*\)\.\([0-9]*\)$/\1\2/p" "$AGENT_LOG" | sed 's/^0*\(.\)/\1/' | sort -n | tail -n 1
}
ok "A: tax $(last_tax $a) now, at most $(worst_a) since its start (hundredths), speed-up $sa"
[ "$(worst_a)" -le 100 ] || afail "A's tax went up to $(worst_a) hundredths (above 1.00)"
awk -v s="$sa" 'BEGIN { exit !(s > 1.5) }' || afail "A's speed-up $sa, want > 1.5 (emulated: 2)"

# status says the same (what it pays now, which may have moved a rung since).
st=$(scx_chameleon status) || afail "status: $st"
echo "$st" | grep -E "^pid ($a|$b):" | sed 's/^/   /'
# status_tax PID: the tax status shows for PID, hundredths.
status_tax() {
	echo "$st" | sed -n "s/^pid $1: .* tax auto \([0-9]*\)\.\([0-9]*\) (speed-up [0-9.]*, progress from file, .*/\1\2/p" | sed 's/^0*\(.\)/\1/'
}
[ -n "$(status_tax $a)" ] && [ -n "$(status_tax $b)" ] || afail "status does not show both auto taxes: $(echo "$st" | grep -E "^pid " | tr '\n' '|')"
[ "$(status_tax $a)" -le 100 ] || afail "status: A's tax $(status_tax $a) hundredths"
[ "$(status_tax $b)" -ge 5000 ] || afail "status: B's tax $(status_tax $b) hundredths"
# B's speed-up from status: the median of its last 5 ratios (the log's
# line is its first estimate, of 3, printed when its tax first moved; its
# ratios spread 0.5-1.16 under TCG).
sb=$(echo "$st" | sed -n "s/^pid $b: .* (speed-up \([0-9.]*\), .*/\1/p")
awk -v s="$sb" 'BEGIN { exit !(s != "" && s < 1.1) }' || afail "B's speed-up '$sb' in status, want < 1.1: $(echo "$st" | grep -E "^pid $b:")"

# The kernel's account: A's CPU time over 4 s, in per mille of the window
# (a plain CPU gives 500 here; fused, 1000 less its native explorations,
# a quarter of its time at 500: 875).
r=$(cpu_share 4000 $a $b) || afail "cpu_share"
set -- $r
ok "schedstat over 4 s: A ran $1 ‰, B $2 ‰ of the window"
echo "   A's paired ratios, all: $(pairs $a)"
echo "   A's samples after the first 50:"
samples $a | tail -n +51
[ "$1" -ge 650 ] || afail "A ran $1 ‰: no more than a plain CPU at 50 % (not fused)"
[ "$(worst_a)" -le 100 ] || afail "A's tax went up to $(worst_a) hundredths (above 1.00) by the end"
[ "$(last_tax $b)" -ge 5000 ] || afail "B's tax came down to $(last_tax $b) hundredths by the end"
ok "at the end: A's tax $(last_tax $a), B's $(last_tax $b) (hundredths), $(( ($(now_ms) - ta) / 1000 )) s after A's start"
end_tasks $a $b
[ "$(state)" = enabled ] || afail "scheduler ejected"
stop_agent
pass
