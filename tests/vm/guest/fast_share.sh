#!/bin/sh
# Fast contexts go to the high class first (AASH §2.3, §3.4): a tag's
# prio=high, and the boost of a cgroup in a sequential phase (at most
# --boost-threshold awake requesters). Three level-1 requesters on 4 CPUs
# (pairs for two): one alone in cgroup S, two in cgroup P, equal weights.
#   control: --boost-threshold 0, no prio: the three take equal turns, each
#            holds a pair in about 2/3 of the samples;
#   prio:    --boost-threshold 0, S tagged prio=high: S holds a pair in
#            (nearly) every sample, P's two share the other;
#   boost:   default threshold (1), no prio: S has one awake requester, so it
#            is boosted: as prio.
# Who holds a pair is sampled from `scx_chameleon status` every 100 ms for
# 4 s; the kernel's side is sampled with it: the CPU /proc/PID/stat says S's
# task is on, against the representative status names. Then one 3 s window
# of the kernel's accounting (cpu_share): each task's CPU time (schedstat),
# CPUs 0-3's idle time and that of the CPU lent to S (reported: under
# rotation objects move within the window). Where S keeps its pair (prio,
# boost) it has its representative to itself while P's two take turns on
# the other: asserted, S runs at least 900 per mille of the window (as it
# holds a pair in 90 % of the samples), 100 per mille more than either P,
# and the CPU lent to it idles; in control (equal turns) S runs less than
# 100 per mille more than the better served P (S over the better P,
# measured: 14-57 in control, 265-313 with prio or boost).
. /opt/chameleon/guest/lib.sh
TEST=fast_share
CG=/sys/fs/cgroup

# run_case NAME PRIO_S AGENT_ARGS...: S's tag gets prio PRIO_S; sets
# RESULT="S P1 P2 N ON_REP IDLE S_PM P1_PM P2_PM S_LENT S_LENT_IDLE" (samples
# held by each, samples, S's task on its representative by the kernel, CPUs
# 0-3's idle time summed, each task's CPU time, per mille of the window, the
# CPU lent to S at the window's start (or -) and its idle time).
run_case() {
	name=$1 prio=$2
	shift 2
	start_agent "$@"
	for g in S P; do make_cgroup fs_$g; done
	scx_chameleon tag fs_S --level 1 --prio "$prio" >/dev/null || fail "$name: cannot tag fs_S"
	scx_chameleon tag fs_P --level 1 --prio normal >/dev/null || fail "$name: cannot tag fs_P"
	spin -g $CG/fs_S $LONG >/dev/null &
	s=$!
	spin -g $CG/fs_P $LONG >/dev/null &
	p1=$!
	spin -g $CG/fs_P $LONG >/dev/null &
	p2=$!
	sleep 1
	hs=0 h1=0 h2=0 n=0 onrep=0
	while [ $n -lt 40 ]; do
		# Who holds a pair ("pid N: ... -> [rep, lent]"), and the CPU
		# the kernel has S's task on (/proc/PID/stat, field 39) against
		# S's representative, in one pass.
		set -- $(scx_chameleon status | awk -v s="$s:" -v a="$p1:" -v b="$p2:" -v stat="/proc/$s/stat" '
			$1 == "pid" && $2 != s && /-> \[/ { held[$2] = 1 }
			$1 == "pid" && $2 == s && /-> \[[0-9]+,/ {
				held[s] = 1; rep = $0; sub(/.*-> \[/, "", rep); sub(/,.*/, "", rep) }
			END {
				on = 0
				if (held[s] && (getline line < stat) > 0) { split(line, f, " "); on = f[39] == rep }
				print held[s] + 0, held[a] + 0, held[b] + 0, on
			}')
		hs=$(( hs + $1 )) h1=$(( h1 + $2 )) h2=$(( h2 + $3 )) onrep=$(( onrep + $4 ))
		n=$(( n + 1 ))
		usleep 100000
	done
	o=$(object $s)
	sl=- sli=-
	case "$o" in *", "*) sl=${o##* } ;; esac
	shares k 3000 $s $p1 $p2 cpu0 cpu1 cpu2 cpu3
	set -- $k
	idle=$(( $4 + $5 + $6 + $7 ))
	[ "$sl" = - ] || eval "sli=\$$(( sl + 4 ))"
	tasks="$1 $2 $3 $sl $sli"
	# The kernel's count of tasks put back on a CPU without asking us
	# because they were inside migrate_disable(): a kick of the agent in a
	# bpf() syscall on a CPU being lent preempted it again at once, 22,000
	# times a second under rotation (bench/aash_overhead). A few a run now.
	md=$(scx_event SCX_EV_ENQ_SKIP_MIGRATION_DISABLED)
	echo "   $name: SCX_EV_ENQ_SKIP_MIGRATION_DISABLED ${md:-absent}"
	[ -n "$md" ] || fail "$name: the kernel has no SCX_EV_ENQ_SKIP_MIGRATION_DISABLED in /sys/kernel/sched_ext/root/events"
	[ "$md" -le 200 ] || fail "$name: $md migration-disabled tasks re-enqueued behind our back (a kick ping-pong on a lent CPU)"
	end_tasks $s $p1 $p2
	scx_chameleon untag fs_S >/dev/null
	scx_chameleon untag fs_P >/dev/null
	stop_agent
	RESULT="$hs $h1 $h2 $n $onrep $idle $tasks"
}

# report NAME S P1 P2 N ON_REP IDLE S_PM P1_PM P2_PM: S's task on its
# representative is held to only where S keeps its pair (prio, boost): under
# rotation (control) the task is often on its way to its next representative
# when sampled.
report() {
	ok "$1: pairs held in $5 samples: S $2, P $3 and $4; S's task on its representative (kernel) in $6 of $2"
	ok "$1: kernel accounting over 3 s: schedstat S $8 ‰, P $9 ‰ and ${10} ‰; CPUs 0-3 idle $7 ‰ of one CPU (of 4000), CPU ${11} (lent to S at the start) ${12} ‰"
	[ $(( $2 + $3 + $4 )) -ge $(( 2 * $5 - 3 )) ] || fail "$1: pairs held $(( $2 + $3 + $4 )) times in $5 samples (want 2 each)"
}
# favoured NAME S_PM P1_PM P2_PM S_LENT S_LENT_IDLE: S has its pair to
# itself in the kernel's accounting too.
favoured() {
	[ "$2" -ge 900 ] && [ "$2" -ge $(( $3 + 100 )) ] && [ "$2" -ge $(( $4 + 100 )) ] ||
		fail "$1: S ran $2 ‰, P $3 ‰ and $4 ‰ (schedstat): S does not have its representative to itself"
	[ "$5" != - ] || fail "$1: S had no pair at the window's start"
	[ "$6" -ge 800 ] || fail "$1: CPU $5, lent to S, idled $6 ‰ of the window"
}

run_case control normal --boost-threshold 0
set -- $RESULT
report control "$@"
# Equal turns: each holds about 2/3 of the samples (27 of 40; a sampled
# share spreads by about 3): S stays below the 90 % prio and boost give it.
[ "$1" -le $(( $4 * 85 / 100 )) ] ||
	fail "control: S held $1 of $4 samples (P $2, $3): it is favoured without prio or boost"
[ "$2" -gt 0 ] && [ "$3" -gt 0 ] && [ "$1" -gt 0 ] || fail "control: somebody never got a turn ($*)"
[ "$7" -lt $(( $8 + 100 )) ] || [ "$7" -lt $(( $9 + 100 )) ] ||
	fail "control: S ran $7 ‰, P $8 ‰ and $9 ‰ (schedstat): favoured without prio or boost"

run_case prio high --boost-threshold 0
set -- $RESULT
report prio "$@"
[ "$1" -ge $(( $4 * 9 / 10 )) ] || fail "prio: S (prio=high) held a pair in $1 of $4 samples"
[ "$5" -ge $(( $1 * 8 / 10 )) ] || fail "prio: the kernel had S's task on its representative in $5 of $1 samples"
[ "$2" -gt 0 ] && [ "$3" -gt 0 ] || fail "prio: P's tasks never got the other pair ($2, $3)"
favoured prio $7 $8 $9 ${10} ${11}

run_case boost normal
set -- $RESULT
report boost "$@"
[ "$1" -ge $(( $4 * 9 / 10 )) ] || fail "boost: S (one awake requester, threshold 1) held a pair in $1 of $4 samples"
[ "$5" -ge $(( $1 * 8 / 10 )) ] || fail "boost: the kernel had S's task on its representative in $5 of $1 samples"
[ "$2" -gt 0 ] && [ "$3" -gt 0 ] || fail "boost: P's tasks never got the other pair ($2, $3)"
favoured boost $7 $8 $9 ${10} ${11}
pass
