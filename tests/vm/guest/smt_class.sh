#!/bin/sh
# SMT classes hold under a competing load (bi-modal SMT; Chameleon §5.5: a
# core is a level-1 object of its siblings). 4 CPUs as 2 cores x 2 threads,
# 4 untagged CPU-bound spinners that may run anywhere, and one tagged
# spinner at a time, measured from the kernel's accounting (/proc/stat):
#   uni: its core's other thread idles >= 90 % of the time while it runs,
#        and a task pinned there still runs (the lending bound);
#   smt: it shares its core: never fuses, and the machine stays busy (the
#        CPUs' idle share < 10 %);
#   any (tax 1, the default class): reported beside them (its sibling idles
#        when its virtual thread is ahead there, by the tax).
. /opt/chameleon/guest/lib.sh
TEST=smt_class

[ "$(nproc)" = 4 ] || fail "needs 4 CPUs, has $(nproc)"
sib=$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)
[ "$sib" = "0-1" ] || [ "$sib" = "0,1" ] || fail "needs SMT pairs (cpu0 siblings: $sib)"
for g in u s a; do make_cgroup $g; done
start_agent --events --tag u=level:1,smt:uni --tag s=level:1,smt:smt --tag a=level:1

# object PID: its CPUs as "r s", empty if none.
object() {
	scx_chameleon status | sed -n "s/^pid $1: .*-> \[\(.*\)\]$/\1/p" | tr -d ','
}

# all_idle_wall MS_WINDOW: the idle share of all 4 CPUs over the window, % of wall.
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
	i0= ; for c in 0 1 2 3; do i0="$i0 $(cpu_jiffies $c | cut -d' ' -f1)"; done
	t0=$(now_ms) r0=$(run_ns $p) f0=$(count_events fuse)
	sleep 5
	i1= ; for c in 0 1 2 3; do i1="$i1 $(cpu_jiffies $c | cut -d' ' -f1)"; done
	t1=$(now_ms) r1=$(run_ns $p)
	set -- $i0
	a0=$1 b0=$2 c0=$3 d0=$4
	set -- $i1
	idle="$(( ($1 - a0) * 1000 / (t1 - t0) )) $(( ($2 - b0) * 1000 / (t1 - t0) )) $(( ($3 - c0) * 1000 / (t1 - t0) )) $(( ($4 - d0) * 1000 / (t1 - t0) ))"
	ran=$(( (r1 - r0) / 10000 / (t1 - t0) ))
	fuses=$(grep -c "^event  *fuse .*pid=$p " "$AGENT_LOG")
	splits=$(grep -E "^event +split .*pid=$p " "$AGENT_LOG" | sed "s/.*reason=\([a-z]*\).*/\1/" | sort | uniq -c | tr -s ' \n' '  ')
	ok "$case: pid $p object [${obj}], ran $ran% of 5 s (schedstat), CPUs 0-3 idle $idle % of wall, $fuses fuses, splits:${splits:- none}"
	case $case in
	u)	set -- $idle
		eval "oi=\$$(( other + 1 ))"
		[ "$oi" -ge 90 ] || fail "uni: its sibling CPU $other idle $oi % (< 90 %)"
		# What holds the core ends for a task that can run on the
		# sibling only: the lending bound, no unbounded wait.
		spin -c "$other" $LONG >/dev/null &
		pin=$!
		set -- $(longest_stall $pin 3)
		ok "uni: a task pinned to CPU $other ran $2 ms of 3 s, longest wait $1 ms"
		[ "$2" -gt 0 ] && [ "$1" -lt 2000 ] || fail "uni: the pinned task waited $1 ms, ran $2 ms"
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
