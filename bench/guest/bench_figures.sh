#!/bin/sh
# Benchmark (not a test): Chameleon's Figures 3-8 with stand-in programs, in
# one VM boot per figure. Driven by bench/figures. Prints each result as
#   BENCH csv FILE LINE
# (the first line of each FILE its header).
#   bench_figures.sh fig3|fig4|fig5|fig6|fig7|fig8 [ARGS...]
#
# Progress is measured as the kernel accounts it: a task's CPU time
# (/proc/PID/schedstat, or its own CLOCK_THREAD_CPUTIME_ID in `work`) per
# wall second. Under the module's emulation (Chameleon §5.1, Table 2) a
# plain CPU runs 50 % of the time and a fused representative 75 % or 100 %,
# so that share is the task's speed; a speed-up is a share over the share
# the same task gets alone on a plain CPU, measured in the same boot.
. /opt/chameleon/guest/lib.sh
TEST=bench_figures
fig=$1
echo "BENCH header $(uname -r)"
shift

csv() { echo "BENCH csv $fig.csv $*"; }

# Everything that is not the experiment lives on the last CPU (the
# "house"): this shell, the agent, kthreads that may move, device IRQs.
# Otherwise every wakeup landing on a representative splits its object,
# whatever the policy does (emulate.sh).
HOUSE=$(( $(nproc) - 1 ))
isolate() {
	m=$(printf '%x' $(( 1 << HOUSE )))
	taskset -p "$m" $$ >/dev/null || fail "cannot pin the shell"
	echo "$m" >/sys/devices/virtual/workqueue/cpumask 2>/dev/null
	for d in /proc/[0-9]*; do taskset -p "$m" "${d#/proc/}" >/dev/null 2>&1; done
	for d in /proc/irq/[0-9]*; do echo $HOUSE >"$d/smp_affinity_list" 2>/dev/null; done
	# The experiment's CPUs: all but the house.
	WORK=$(printf '%x' $(( (1 << HOUSE) - 1 )))
}

# The emulated figures' common start: the house, the module, the cgroup seq.
isolated_emulation() {
	isolate
	insmod /opt/chameleon/chameleon_proxy.ko || fail "insmod"
	make_cgroup seq
}

# share PID MS: the task's CPU time over the next MS, per mille of the window.
share() { cpu_share "$2" "$1" || fail "cpu_share $1"; }

# Baseline: a spinner alone on plain CPU $1 under the emulation (the
# paper's "single baseline CPU"), per mille.
baseline() {
	taskset -c "$1" spin $LONG >/dev/null &
	_b=$!
	sleep 2
	_s=$(share $_b 3000)
	kill $_b
	wait $_b 2>/dev/null
	echo "$_s"
}

# --- Figure 3: taxation, A (level 1, object {0,1}) against B pinned to CPU 1.
fig3() {
	secs=${1:-12}
	isolated_emulation
	csv "tax,a_fused_pct,cpu1_idle_pct,a_share_pm,b_share_pm,base_pm,a_rel_time,b_rel_time,fuses,splits"
	for tax in 100 1 0.01; do
		start_agent --events --emulate high --tag seq=level:1,tax:$tax
		base=$(baseline 2)
		spin -c 1 $LONG >/dev/null &
		b=$!
		sleep 0.5
		taskset 0x1 spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
		a=$!
		sleep 2
		shares s $(( secs * 1000 )) $a $b cpu1
		set -- $s
		as=$1 bs=$2 idle=$(( $3 / 10 ))
		end_tasks $a $b
		stop_agent
		# Execution time relative to the task alone on a baseline CPU.
		ra=$(echo "$base $as" | awk '{ printf "%.3f", $1 / $2 }')
		rb=$(echo "$base $bs" | awk '{ printf "%.3f", $2 ? $1 / $2 : 0 }')
		csv "$tax,$(fused_pct $a),$idle,$as,$bs,$base,$ra,$rb,$(count_events fuse),$(count_events split)"
	done
}

# --- Figure 4: parallel programs untagged under scx_chameleon vs EEVDF.
fig4() {
	rounds=${1:-3} work_ms=${2:-4000}
	n=$(nproc)
	csv "round,program,eevdf_wall_ms,chameleon_wall_ms,perf_ratio"
	r=1
	while [ $r -le "$rounds" ]; do
		for mode in static dynamic; do
			e=$(work -t $n -m $mode $((work_ms * n)) | sed 's/.*wall_ms=\([0-9.]*\).*/\1/')
			start_agent
			c=$(work -t $n -m $mode $((work_ms * n)) | sed 's/.*wall_ms=\([0-9.]*\).*/\1/')
			stop_agent
			csv "$r,$mode,$e,$c,$(echo "$e $c" | awk '{ printf "%.3f", $1 / $2 }')"
		done
		r=$((r + 1))
	done
}

# --- Figure 5: one sequential task alone: native, fused 2, fused 4, for the
# three speed-up categories (Table 2). 6 CPUs: object {0..3}, plain CPU 4.
fig5() {
	secs=${1:-4}
	isolated_emulation
	csv "category,native_pm,fused2_pm,fused4_pm,speedup2,speedup4"
	for cat in low med high; do
		start_agent --events --emulate $cat
		taskset 0x1 spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
		a=$!
		sleep 2
		n=$(share $a $(( secs * 1000 )))
		scx_chameleon tag seq --level 1 --tax 0.01 >/dev/null || fail "tag"
		wait_log "^event  *fuse .*pid=$a .*cpus=[0-9]*,[0-9]* " 20000 "no level-1 fuse"
		sleep 2
		f2=$(share $a $(( secs * 1000 )))
		scx_chameleon tag seq --level 2 --tax 0.01 >/dev/null || fail "retag"
		wait_log "^event  *fuse .*pid=$a .*cpus=[0-9]*,[0-9]*,[0-9]*,[0-9]* " 20000 "no level-2 fuse"
		sleep 2
		f4=$(share $a $(( secs * 1000 )))
		end_tasks $a
		scx_chameleon untag seq >/dev/null 2>&1
		stop_agent
		csv "$cat,$n,$f2,$f4,$(echo "$n $f2 $f4" | awk '{ printf "%.3f,%.3f", $2 / $1, $3 / $1 }')"
	done
}

# alloc_from_log T0_NS PIDS_FILE: every object the agent published for the
# tasks in PIDS_FILE ("pid name" lines), from its log (debug lines of its
# decisions: "assign pid=P cpus=[..] ... ts_ns=T", "unassign pid=P
# ts_ns=T"), as "t_ms,name,size"
# (size 0: no object), t from T0_NS (now_ns). Polling `status` from the
# shell was too slow under TCG (two samples in 10 s).
alloc_from_log() {
	awk -v t0="$1" 'NR == FNR { name[$1] = $2; next }
		/DEBUG (assign|unassign) pid=/ {
			l = $0; sub(/.*DEBUG /, "", l); split(l, f, " ")
			split(f[2], kv, "="); pid = kv[2]
			if (!(pid in name)) next
			ts = $NF; sub(/^ts_ns=/, "", ts)
			size = 0
			if (f[1] == "assign") { c = l; sub(/.*cpus=\[/, "", c); sub(/\].*/, "", c); size = split(c, x, ",") }
			printf "%d,%s,%d\n", (ts - t0) / 1000000, name[pid], size }' "$2" "$AGENT_LOG"
}

# --- Figure 6: 2, 3, 4 sequential tasks on 8 CPUs (4 cores x 2) of 10: the
# node manager gets CPUs 0-7, the house is CPU 9; 3* without the exit
# notification. Each task must do WORK ms of CPU; tasks start together;
# speed-up = (work / wall) over the baseline share (measured on CPU 8).
fig6() {
	work_ms=${1:-4000}
	isolated_emulation
	csv "case,task,work_ms,wall_ms,speedup"
	: >/tmp/alloc_all
	for case in 2 3 3star 4; do
		n=${case%star}
		flags=
		[ "$case" = 3star ] && flags=--no-exit-notice
		start_agent --events --emulate high $flags --node-cpus 0-7 --tag seq=level:2,weight:1,tax:1
		base=$(baseline 8)
		: >/tmp/pids
		t0=$(now_ns)
		i=1
		# Different amounts, so that they end one after the other and the
		# CPUs of the first to end go to the others (the paper's 3 case).
		while [ $i -le "$n" ]; do
			taskset 0xff work -g /sys/fs/cgroup/seq $((work_ms + (i - 1) * work_ms / 2)) >/tmp/w$i.out &
			echo "$! seq$i" >>/tmp/pids
			i=$((i + 1))
		done
		for p in $(cut -d' ' -f1 /tmp/pids); do wait $p; done
		stop_agent
		alloc_from_log "$t0" /tmp/pids >/tmp/alloc
		# For the record (the VM log): what the agent did for these tasks.
		pids=$(cut -d' ' -f1 /tmp/pids | tr '\n' '|')
		grep -E "DEBUG (assign|unassign|rebalanced)|^event +(demand|sleep|wake|task_exit) .*pid=(${pids%|}) " "$AGENT_LOG" |
			sed "s/^/fig6 $case: /" | head -n 200
		i=1
		while [ $i -le "$n" ]; do
			set -- $(sed 's/.*work_ms=\([0-9]*\) wall_ms=\([0-9.]*\).*/\1 \2/' /tmp/w$i.out)
			csv "$case,seq$i,$1,$2,$(echo "$1 $2 $base" | awk '{ printf "%.3f", $1 / $2 / ($3 / 1000) }')"
			i=$((i + 1))
		done
		sed "s/^/$case,/" /tmp/alloc >>/tmp/alloc_all
	done
	echo "BENCH csv fig6_alloc.csv case,t_ms,task,size"
	sed 's/^/BENCH csv fig6_alloc.csv /' /tmp/alloc_all
}

# --- Figure 7: under-provisioned: NSEQ (default 1) sequential tasks (level 2) and a
# parallel program with a thread per CPU, static and dynamic binding, tax
# 0.01 / 1 / 100. 8 CPUs, no house (the machine is full on purpose).
# The paper's proportions: 3 sequential tasks of 4 CPUs on 24 (half the
# machine in objects; one of 4 on 8 here), and a parallel program that
# outlasts them (N-Queen "finishes quickly and the parallel program then
# uses all 24 CPUs"), so that the sequential tasks run under contention
# from start to end: PAR_MS 5000 per thread (about 10 s at the emulated
# 50 % duty) against SEQ_MS 3000 (about 6 s native). With PAR_MS 2000 the
# parallel program ended first and the sequential tasks' tail ran alone.
#   fig7 [SEQ_MS] [PAR_MS] [NSEQ]
fig7() {
	seq_ms=${1:-3000} par_ms=${2:-5000} nseq=${3:-1}
	insmod /opt/chameleon/chameleon_proxy.ko || fail "insmod"
	make_cgroup seq
	n=$(nproc)
	csv "binding,tax,seq_speedup,par_speedup,seq_wall_ms,par_wall_ms,base_pm,seq_fused_pct,fuses,assigns"
	# FIG7_BINDINGS / FIG7_TAXES: a subset, for a quick look or a bisect.
	for binding in ${FIG7_BINDINGS:-static dynamic}; do
		for tax in ${FIG7_TAXES:-100 1 0.01}; do
			start_agent --events --emulate high --tag seq=level:2,weight:1,tax:$tax
			base=$(baseline 0)
			work -t $n -m $binding $((par_ms * n)) >/tmp/par.out &
			p=$!
			sleep 0.3
			seqs=
			i=1
			while [ $i -le "$nseq" ]; do
				work -g /sys/fs/cgroup/seq "$seq_ms" >/tmp/s$i.out &
				seqs="$seqs $!"
				i=$((i + 1))
			done
			wait $seqs $p
			stop_agent
			sw=$(cat /tmp/s[0-9]*.out | sed 's/.*wall_ms=\([0-9.]*\).*/\1/' | awk '{ s += $1 } END { printf "%.1f", s / NR }')
			rm -f /tmp/s[0-9]*.out
			pw=$(sed 's/.*wall_ms=\([0-9.]*\).*/\1/' /tmp/par.out)
			ss=$(echo "$seq_ms $sw $base" | awk '{ printf "%.3f", $1 / $2 / ($3 / 1000) }')
			ps=$(echo "$((par_ms * n)) $pw $base" | awk '{ printf "%.3f", $1 / $2 / ($3 / 1000) }')
			fp=0
			for s in $seqs; do fp=$((fp + $(fused_pct $s))); done
			fp=$((fp / nseq))
			echo "fig7 $binding tax $tax: split reasons: $(grep -E '^event +split ' "$AGENT_LOG" | sed 's/.*reason=\([a-z]*\).*/\1/' | sort | uniq -c | tr '\n' ' ')"
			csv "$binding,$tax,$ss,$ps,$sw,$pw,$base,$fp,$(count_events fuse),$(grep -c 'DEBUG assign ' "$AGENT_LOG")"
		done
	done
}

# --- Figure 8: allocation by weight on 10 CPUs (5 cores x 2): astar, astar
# (weight 1) from the start, lbm (weight 2) at a, sjeng (weight 3) at b; lbm
# ends at c, sjeng at d.
fig8() {
	step=${1:-4}
	make_cgroup astar
	make_cgroup lbm
	make_cgroup sjeng
	start_agent --events --tag astar=level:2,weight:1,tax:1 \
		--tag lbm=level:2,weight:2,tax:1 --tag sjeng=level:2,weight:3,tax:1
	: >/tmp/pids
	t0n=$(now_ns)
	spin -g /sys/fs/cgroup/astar $((step * 5)) >/dev/null &
	echo "$! astar1" >>/tmp/pids
	spin -g /sys/fs/cgroup/astar $((step * 5)) >/dev/null &
	echo "$! astar2" >>/tmp/pids
	t0=$(now_ms)
	echo "BENCH csv fig8_events.csv t_ms,event,what"
	sleep "$step"
	echo "BENCH csv fig8_events.csv $(( ($(now_ns) - t0n) / 1000000 )),a,lbm starts"
	spin -g /sys/fs/cgroup/lbm $((step * 2)) >/dev/null &
	echo "$! lbm" >>/tmp/pids
	sleep "$step"
	echo "BENCH csv fig8_events.csv $(( ($(now_ns) - t0n) / 1000000 )),b,sjeng starts"
	spin -g /sys/fs/cgroup/sjeng $((step * 2)) >/dev/null &
	echo "$! sjeng" >>/tmp/pids
	sleep "$step"
	echo "BENCH csv fig8_events.csv $(( ($(now_ns) - t0n) / 1000000 )),c,lbm ends"
	sleep "$step"
	echo "BENCH csv fig8_events.csv $(( ($(now_ns) - t0n) / 1000000 )),d,sjeng ends"
	sleep "$step"
	# (not a bare wait: the agent is a child too)
	for p in $(cut -d' ' -f1 /tmp/pids); do wait "$p"; done
	stop_agent
	echo "BENCH csv fig8.csv t_ms,task,size"
	alloc_from_log "$t0n" /tmp/pids | sed 's/^/BENCH csv fig8.csv /'
}

case $fig in
fig3|fig4|fig5|fig6|fig7|fig8) "$fig" "$@" ;;
*) fail "unknown figure $fig" ;;
esac
pass
