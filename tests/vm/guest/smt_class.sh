#!/bin/sh
# SMT classes hold under a competing load (bi-modal SMT; Chameleon §5.5: a
# core is a level-1 object of its siblings). 4 CPUs as 2 cores x 2 threads,
# 4 untagged CPU-bound spinners that may run anywhere, and one tagged
# spinner at a time, measured from the kernel's accounting (/proc/stat idle
# over a monotonic window, schedstat):
#   uni: its core's other thread idles >= 90 % of the time while it runs,
#        and a task pinned there still runs within the lending bound: mean
#        wait per turn (schedstat run_delay / timeslices) <= 2 x (W + 2 G),
#        W = --lend-wait-ms (default 50: src/agent/opts.rs), G = the 10 ms
#        guard period (lend_due() in bpf/main.bpf.c), x2 for TCG; its
#        longest stretch without CPU <= that + the sampler's longest gap
#        (wait_watch: its resolution);
#   smt: it shares its core: never fuses, and the machine stays busy (the
#        CPUs' idle share < 10 %);
#   any (tax 1, the default class): reported beside them (its sibling idles
#        when its virtual thread is ahead there, by the tax).
. /opt/chameleon/guest/lib.sh
TEST=smt_class
LEND_WAIT_MS=50 GUARD_MS=10
BOUND_MS=$(( 2 * (LEND_WAIT_MS + 2 * GUARD_MS) ))

[ "$(nproc)" = 4 ] || fail "needs 4 CPUs, has $(nproc)"
sib=$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)
[ "$sib" = "0-1" ] || [ "$sib" = "0,1" ] || fail "needs SMT pairs (cpu0 siblings: $sib)"
for g in u s a; do make_cgroup $g; done
start_agent --events --tag u=level:1,smt:uni --tag s=level:1,smt:smt --tag a=level:1

# object PID: its CPUs as "r s", empty if none.
object() {
	scx_chameleon status | sed -n "s/^pid $1: .*-> \[\(.*\)\]$/\1/p" | tr -d ','
}

for case in a u s; do
	# A fresh load for each case, spread over every CPU.
	load=
	for i in 1 2 3 4; do
		spin $LONG >/dev/null &
		load="$load $!"
	done
	sleep 1
	spin -g /sys/fs/cgroup/$case $LONG >/dev/null &
	p=$!
	sleep 1
	obj=$(object $p)
	case $case in
	s)	[ -z "$obj" ] || fail "smt: pid $p has an object ($obj)" ;;
	*)	[ -n "$obj" ] || fail "$case: pid $p has no object: $(scx_chameleon status | grep '^pid')" ;;
	esac
	set -- $obj
	other=${2:-}
	# One 5 s window: the task's CPU time and each CPU's idle time, in ‰.
	shares sh 5000 $p cpu0 cpu1 cpu2 cpu3
	set -- $sh
	ran=$(( $1 / 10 ))
	idle="$(( $2 / 10 )) $(( $3 / 10 )) $(( $4 / 10 )) $(( $5 / 10 ))"
	fuses=$(grep -c "^event  *fuse .*pid=$p " "$AGENT_LOG")
	splits=$(grep -E "^event +split .*pid=$p " "$AGENT_LOG" | sed "s/.*reason=\([a-z]*\).*/\1/" | sort | uniq -c | tr -s ' \n' '  ')
	ok "$case: pid $p object [${obj}], ran $ran% of 5 s (schedstat), CPUs 0-3 idle $idle % of the window, $fuses fuses, splits:${splits:- none}"
	case $case in
	u)	set -- $idle
		eval "oi=\$$(( other + 1 ))"
		[ "$oi" -ge 90 ] || fail "uni: its sibling CPU $other idle $oi % (< 90 %)"
		# What holds the core ends for a task that can run on the
		# sibling only: the lending bound, no unbounded wait.
		spin -c "$other" $LONG >/dev/null &
		pin=$!
		get ww wait_watch $pin 3000
		set -- $ww
		longest=$1 turns=$3 gap=$5
		[ "$turns" -gt 0 ] || fail "uni: the task pinned to CPU $other never ran in 3 s"
		mean=$(( $4 / turns ))
		ok "uni: a task pinned to CPU $other ran $2 ms of 3 s in $turns turns, mean wait per turn $mean ms (bound $BOUND_MS), longest stretch without CPU $longest ms (bound $BOUND_MS + the sampler's longest gap, $gap ms)"
		[ "$mean" -le "$BOUND_MS" ] || fail "uni: the pinned task waited $mean ms per turn on average (bound: 2 x (lend wait $LEND_WAIT_MS + 2 guards of $GUARD_MS) = $BOUND_MS ms)"
		[ "$longest" -le $(( BOUND_MS + gap )) ] || fail "uni: the pinned task went $longest ms without CPU (bound $BOUND_MS ms + the sampler's gap of $gap ms)"
		end_tasks $pin ;;
	s)	[ "$fuses" = 0 ] || fail "smt: pid $p fused $fuses times"
		set -- $idle
		tot=$(( $1 + $2 + $3 + $4 ))
		[ "$tot" -lt 40 ] || fail "smt: CPUs idle $tot % of 400 % (>= 10 % each on average)" ;;
	esac
	still_running $load
	end_tasks $p $load
done
[ "$(state)" = enabled ] || fail "scheduler ejected"
stop_agent
pass
