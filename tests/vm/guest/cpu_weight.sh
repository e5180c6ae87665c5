#!/bin/sh
# cgroup cpu.weight is honoured as under EEVDF (systemd's CPUWeight=). On
# CPU 1, measured from the kernel's accounting (schedstat) over one window
# per case, EEVDF first in the same boot as the reference, then
# scx_chameleon without tags:
#   a: one spinner in a cgroup at cpu.weight 100, one at 300: 1:3;
#   b: the 300 changed to 200 while they run (cgroup_set_weight): 1:2;
#   c: one spinner at 100 against three in another cgroup at 100, reported
#      only (EEVDF gives 1:2 here).
# a and b within 10 % of the expected ratio, under both (EEVDF out of it
# means the setup is wrong, and fails the test too).
# d (scx_chameleon only): tags without a weight of their own claim their
#   cgroup's cpu.weight, and contended pairs go round by it (AASH): three
#   level-1 tags at cpu.weight 50, 100 and 300 on 4 CPUs (pairs for two).
. /opt/chameleon/guest/lib.sh
TEST=cpu_weight
CG=/sys/fs/cgroup

echo "+cpu" >$CG/cgroup.subtree_control || fail "cannot enable the cpu controller"
for g in wa wb; do make_cgroup $g; done

# ratio_ok NAME X Y WANT: Y / X within 10 % of WANT (x100 integers).
ratio_ok() {
	[ "$2" -gt 0 ] || fail "$1: the first cgroup got no CPU time"
	r=$(( $3 * 100 / $2 ))
	ok "$1: $2 ms : $3 ms = 1 : $(( r / 100 )).$(printf '%02d' $(( r % 100 ))) (want 1 : $(( $4 / 100 )))"
	[ "$r" -ge $(( $4 * 90 / 100 )) ] && [ "$r" -le $(( $4 * 110 / 100 )) ] ||
		fail "$1: 1 : $r/100, not within 10 % of 1 : $(( $4 / 100 ))"
}

# cpu_ms PID...: CPU time of the tasks together, ms.
cpu_ms() {
	t=0
	for p in "$@"; do t=$(( t + $(run_ns $p) )); done
	echo $(( t / 1000000 ))
}

cases() {
	who=$1
	echo 100 >$CG/wa/cpu.weight && echo 300 >$CG/wb/cpu.weight || fail "cannot set cpu.weight"
	spin -c 1 -g $CG/wa $LONG >/dev/null &
	a=$!
	spin -c 1 -g $CG/wb $LONG >/dev/null &
	b=$!
	sleep 1
	x0=$(cpu_ms $a) y0=$(cpu_ms $b)
	sleep 4
	x1=$(cpu_ms $a) y1=$(cpu_ms $b)
	ratio_ok "$who a (100 : 300)" $((x1 - x0)) $((y1 - y0)) 300
	echo 200 >$CG/wb/cpu.weight || fail "cannot change cpu.weight"
	sleep 1
	x0=$(cpu_ms $a) y0=$(cpu_ms $b)
	sleep 4
	x1=$(cpu_ms $a) y1=$(cpu_ms $b)
	ratio_ok "$who b (100 : 200 set while running)" $((x1 - x0)) $((y1 - y0)) 200
	end_tasks $b
	echo 100 >$CG/wb/cpu.weight
	spin -c 1 -g $CG/wb $LONG >/dev/null &
	b1=$!
	spin -c 1 -g $CG/wb $LONG >/dev/null &
	b2=$!
	spin -c 1 -g $CG/wb $LONG >/dev/null &
	b3=$!
	sleep 1
	x0=$(cpu_ms $a) y0=$(cpu_ms $b1 $b2 $b3)
	sleep 4
	x1=$(cpu_ms $a) y1=$(cpu_ms $b1 $b2 $b3)
	# Reported, not asserted: EEVDF splits this 1 : 2 (4 runs), not the
	# 1 : 1 its group shares suggest; ours is printed beside it.
	ok "$who c (1 task : 3 tasks, both 100): $((x1 - x0)) ms : $((y1 - y0)) ms"
	end_tasks $a $b1 $b2 $b3
}

cases EEVDF
start_agent
cases scx_chameleon
[ "$(state)" = enabled ] || fail "scheduler ejected"

# d: the claims of tags without a weight, shared in turns (AASH): three
# level-1 tags at cpu.weight 50, 100 and 300 on 4 CPUs, pairs for two at a
# time. Each cgroup has one task (each is boosted alike), so the pairs go
# round by weight: 300 holds one all the time, 100 and 50 share the other
# 2 : 1, and both pairs are held at every moment. Sampled from status every
# 50-150 ms, 60 times. Then one 3 s window of the kernel's accounting
# (cpu_share): each task's CPU time (schedstat) and CPUs 0-3's idle time.
# Asserted: ch(300), which holds a pair throughout, has it in the kernel's
# accounting too: it runs at least 800 per mille of the window (as it holds
# a pair in 80 % of the samples) and the CPU lent to it idles as much; and
# the kernel orders their CPU time as the turns go, ch over cm(100) over
# cl(50), each by at least 100 per mille (EEVDF, which knows no tags, gives
# three spinners on 4 CPUs a whole CPU each whatever their weights).
pids=
for g in cl:50 cm:100 ch:300; do
	n=${g%:*}
	make_cgroup $n
	echo ${g#*:} >$CG/$n/cpu.weight || fail "cannot set $n's cpu.weight"
	scx_chameleon tag $n --level 1 >/dev/null || fail "cannot tag $n"
	spin -g $CG/$n $LONG >/dev/null &
	eval "pid_$n=\$!"
	pids="$pids $!"
done
sleep 1
hl=0 hm=0 hh=0 n=0
while [ $n -lt 40 ]; do
	# Who holds an object ("pid N: ... -> [cpus]"), in one pass.
	set -- $(scx_chameleon status | awk -v l="$pid_cl:" -v m="$pid_cm:" -v h="$pid_ch:" '
		$1 == "pid" && /-> \[/ { held[$2] = 1 }
		END { print held[l] + 0, held[m] + 0, held[h] + 0 }')
	hl=$(( hl + $1 )) hm=$(( hm + $2 )) hh=$(( hh + $3 ))
	n=$(( n + 1 ))
	# Jittered (50-150 ms): a fixed period near the turn length aliases
	# with it (CI once saw cm and cl 30 : 30 while the agent's turns ran
	# about 70 ms : 35 ms).
	usleep $(( 50000 + RANDOM % 100 * 1000 ))
done
ok "d: objects held in $n samples: cl(50) $hl, cm(100) $hm, ch(300) $hh (want about 1/3, 2/3, all)"
[ "$hh" -ge $(( n * 8 / 10 )) ] || fail "d: ch(300) held an object in $hh of $n samples only"
[ "$hl" -gt 0 ] || fail "d: cl(50) never got a turn"
[ "$hm" -gt 0 ] || fail "d: cm(100) never got a turn"
# The order of cm over cl is the kernel's to show (below): 40 samples of a
# 2 : 1 turn are too few to order them without flaking.
# No pair idles while a task waits for one: both held at (nearly) every sample.
[ $(( hl + hm + hh )) -ge $(( 2 * n - 3 )) ] || fail "d: pairs held $(( hl + hm + hh )) times in $n samples (want 2 each)"
# The kernel's side of the same shares.
o=$(object $pid_ch)
case "$o" in *", "*) ;; *) fail "d: ch(300) has no pair: [$o]" ;; esac
hl=${o##* }
shares k 3000 $pid_cl $pid_cm $pid_ch cpu0 cpu1 cpu2 cpu3
set -- $k
eval "hli=\$$(( hl + 4 ))"
ok "d: kernel accounting over 3 s: schedstat cl(50) $1 ‰, cm(100) $2 ‰, ch(300) $3 ‰; CPUs 0-3 idle $(( $4 + $5 + $6 + $7 )) ‰ of one CPU (of 4000), CPU $hl (lent to ch at the start) $hli ‰"
[ "$3" -ge 800 ] && [ "$hli" -ge 800 ] ||
	fail "d: ch(300) ran $3 ‰ and CPU $hl, lent to it, idled $hli ‰ of the window: its pair is not its own in the kernel's accounting"
[ "$3" -ge $(( $2 + 100 )) ] && [ "$2" -ge $(( $1 + 100 )) ] ||
	fail "d: schedstat cl(50) $1 ‰, cm(100) $2 ‰, ch(300) $3 ‰: not ordered by weight (want each 100 ‰ over the next)"
end_tasks $pids
stop_agent
pass
