#!/bin/sh
# The module's state belongs to the open file that made it (ABI 3, issue
# 30): however its owner goes, the release of its file undoes everything,
# with nothing else done (no RESET, no rmmod). chameleon_proxy and the
# agent, 4 CPUs (2 cores x 2 threads), checked from the kernel's side.
# Baseline, before any agent: the online CPUs, every IRQ's
# smp_affinity_list and effective_affinity_list, and the share of a spinner
# pinned to CPU 2 (schedstat, 2 s). Each case makes some state through the
# agent, the agent goes, and at +2 s and again at +5 s (+30 s after a
# pending park): the online CPUs and the IRQ affinities as in the baseline, the spinner on CPU 2 gets at least
# 95 % of its baseline share, and the module shows no owner, nothing parked
# or lent and no emulation. Cases:
#  a  --emulate high and a level-1 object (tax 0.01), kill -9: idle
#     injection (the spinner kept 50-51 % of its CPU before ABI 3) and
#     a lend with IRQ 4 moved off the lent CPU;
#  b  `scx_chameleon park 3 --holdoff-ms 15000`, kill -9 within the
#     hold-off: the pending park is cancelled, CPU 3 never goes offline
#     (the online CPUs are watched until +30 s, and checked at +16 s too);
#  c  park 3 with hold-off 0, kill -9 once CPU 3 is offline: it comes back.
#     A park is a request of a live scheduler, and the module only takes
#     offline CPUs it parked, so with the scheduler gone the right end state
#     is every CPU online (0-3), not the park it left;
#  d  a level-1 object with IRQ 4 moved off the lent CPU, kill -9 (before
#     ABI 3 it passed too: the dying policy's teardown ended its lend and
#     the module gave the IRQ back; the release must do as well);
#  e  the agent panics in its main loop (--test-panic-after-ms 1500) with
#     --emulate high;
#  f  kill -9 at 0, 100 and 300 ms after starting --emulate high, and
#     as soon as STATS shows the emulation on (the start-up window);
#  g  a clean stop (SIGTERM, exit 0), then rmmod at once, with no retry: it
#     must succeed (the agent waits for the kernel to drop the policy's
#     module references before it exits); then insmod again;
#  m  no agent: a proxy_ctl session parks 3 (hold-off 0) and is killed once
#     CPU 3 is offline: 0-3 online and the IRQs as before within 2 s;
#  n  no agent, a remove_cpu() that does not return: an RT hog (RT
#     throttling off) holds CPU 1, whose hotplug thread (a per-CPU kthread
#     of the fair class) then never runs, so the offline of a session's
#     park of 1 (hold-off 0) waits in remove_cpu() as long as the hog runs.
#     (CPU 1's fair server is stopped meanwhile: see hog_on.)
#     (1) The session's RESET waits for that offline: kill -9 of the
#     session must end it within 3 s (before, it sat in D state until the
#     hog ended: an agent stuck so could not be killed). (2) A session
#     parks 1 and is killed at once; a one-shot CLAIM then waits for the
#     release's cleanup, behind the same offline: its kill -9 likewise.
#     Each time the hog then ends, the offline completes, and the release
#     brings CPU 1 back: 0-3 online, the IRQs as before, no owner.
# IRQ 4 (ttyS0) is put wholly on the CPU a case takes away (before its
# agent starts, its line of the baseline with it): CPU 1, which a level-1
# object on [0, 1] lends, or CPU 3 for the parks. Only ttyS0's: an IO-APIC
# or MSI IRQ takes a new affinity at its next interrupt, and only this one
# interrupts when we want (each line printed); one that fires now and then
# (virtio0-virtqueues) showed its old CPU in effect for minutes after the
# module gave it its affinity back.
# Unlike other tests, a failed check does not end the test: each case is a
# finding of its own (the figures go into a report), so each prints its
# measurements and its failures ("FAILED (x): ..."), then what it left
# behind is put back by hand and said ("put back: ..."), and the test fails
# at the end naming the cases. CASES="a c" runs some of them, in that order.
. /opt/chameleon/guest/lib.sh

ko=/opt/chameleon/chameleon_proxy.ko
irq=4	# ttyS0: every line printed interrupts (an IO-APIC IRQ moves at its next one)
[ "$(nproc)" = 4 ] || fail "needs 4 CPUs, has $(nproc)"
CASES=${CASES:-a b c d e f g m n}

# The test shell and the agent on CPUs 2-3: the objects live on [0, 1], and
# a wakeup there would split them for nothing.
taskset -p 0xc $$ >/dev/null || fail "cannot pin the test shell"
insmod "$ko" || fail "insmod failed"
make_cgroup seq
TAG="seq=level:1,tax:0.01"

# --- The kernel's view ---

# irq_table: "N AFFINITY EFFECTIVE" for every IRQ, "-" for a value that
# cannot be read or is empty.
irq_table() {
	for d in /proc/irq/[0-9]*; do
		_a=$(cat "$d/smp_affinity_list" 2>/dev/null)
		_e=$(cat "$d/effective_affinity_list" 2>/dev/null)
		echo "${d#/proc/irq/} ${_a:--} ${_e:--}"
	done
}
# irq_check: every IRQ as in the baseline (/tmp/irq.base): one line per IRQ
# that is not on stdout, status 1 if any. The affinity must be the same;
# so must the CPU in effect where the affinity is one CPU. Where it is
# several, the kernel picks the CPU in effect and keeps it while it stays
# in the mask (moved off CPU 3 by a park, an IRQ with affinity 0-3 stays
# where it went when 0-3 is restored): there it must only lie in the
# affinity. IRQ_ELSEWHERE: how many were like that.
irq_check() {
	irq_table >/tmp/irq.now
	awk '
	function expand(l,   n, i, r, p, c, s) {
		s = ","
		n = split(l, r, ",")
		for (i = 1; i <= n; i++)
			if (split(r[i], p, "-") == 2)
				for (c = p[1] + 0; c <= p[2] + 0; c++)
					s = s c ","
			else
				s = s r[i] ","
		return s
	}
	function within(e, a,   x, n, i, q) {
		x = expand(a)
		e = expand(e)
		n = split(substr(e, 2, length(e) - 2), q, ",")
		for (i = 1; i <= n; i++)
			if (!index(x, "," q[i] ","))
				return 0
		return n > 0
	}
	NR == FNR { ba[$1] = $2; be[$1] = $3; next }
	{
		seen[$1] = 1
		if (!($1 in ba)) {
			print "IRQ " $1 " is new (affinity " $2 ", in effect " $3 ")"; bad++
		} else if ($2 != ba[$1]) {
			print "IRQ " $1 ": affinity " $2 " (was " ba[$1] "), in effect " $3 " (was " be[$1] ")"; bad++
		} else if ($3 != be[$1]) {
			if (ba[$1] ~ /^[0-9]+$/ || $3 == "-" || !within($3, $2)) {
				print "IRQ " $1 ": affinity " $2 ", in effect " $3 " (was " be[$1] ")"; bad++
			} else {
				elsewhere++
			}
		}
	}
	END {
		for (i in ba)
			if (!(i in seen)) {
				print "IRQ " i " is gone (was affinity " ba[i] ")"; bad++
			}
		print elsewhere + 0 >"/tmp/irq.elsewhere"
		exit (bad > 0)
	}' /tmp/irq.base /tmp/irq.now
	_rc=$?
	IRQ_ELSEWHERE=$(cat /tmp/irq.elsewhere)
	return $_rc
}
# IRQ $irq's affinity is (is not) $1 (a line printed first makes it interrupt).
irq_aff_is() { echo "   ."; [ "$(cat /proc/irq/$irq/smp_affinity_list)" = "$1" ]; }
irq_not_on() { echo "   ."; [ "$(cat /proc/irq/$irq/smp_affinity_list)" != "$1" ]; }
irq_eff_is() { echo "   ."; [ "$(cat /proc/irq/$irq/effective_affinity_list)" = "$1" ]; }

# mod_state: the module's view in one line.
mod_state() {
	proxy_ctl stats 2>/dev/null | awk -F'[= ]' '
	/^emulate_on=/ { em = $2 } /^owner_pid=/ { ow = $2 }
	/^releases=/ { rel = $2 } /^cleanup_ns=/ { cl = $2 }
	/^cpu=/ {
		for (i = 1; i < NF; i += 2)
			v[$i] = $(i + 1)
		if (v["parked"] == 1)
			pk = pk " " v["cpu"] (v["offlined"] == 1 ? "(offlined)" : "")
		if (v["proxied_by"] >= 0)
			ln = ln " " v["cpu"] "->" v["proxied_by"]
	}
	END {
		printf "owner_pid=%s emulate_on=%s parked=[%s] lent=[%s] releases=%s cleanup_us=%d\n",
			ow, em, substr(pk, 2), substr(ln, 2), rel, cl / 1000
	}'
}

# --- Cases: bookkeeping ---

summary= failed_cases= tagged=
# begin CASE IRQ_CPU WHAT: IRQ $irq wholly on IRQ_CPU from now on, in the
# baseline too.
begin() {
	CASE=$1 CASE_BAD= CASE_N=0
	echo "=== case ($1): $3"
	echo $2 >/proc/irq/$irq/smp_affinity_list || fail "cannot put IRQ $irq on CPU $2"
	until_ok 10000 "IRQ $irq not in effect on CPU $2" irq_eff_is $2
	sed -i "s/^$irq .*/$irq $2 $2/" /tmp/irq.base
	echo "   IRQ $irq on CPU $2"
}
# miss WHAT: a failed check of the current case; the test goes on.
miss() {
	echo "   FAILED ($CASE): $*"
	[ "$CASE_N" -gt 0 ] || CASE_BAD=$*
	CASE_N=$((CASE_N + 1))
}
case_end() {
	if [ "$CASE_N" -gt 0 ]; then
		failed_cases="$failed_cases $CASE"
		summary="$summary
   ($CASE) FAIL: failed checks: $CASE_N, the first: $CASE_BAD"
	else
		summary="$summary
   ($CASE) ok"
	fi
	put_back
}
# wait_for MS WHAT CMD...: until CMD succeeds, MS ms at most; else the
# case's setup did not happen (WHAT) and it returns 1. TOOK: the ms it took.
wait_for() {
	_wms=$1 _wwhat=$2
	shift 2
	_wt0=$(now_ms)
	until "$@"; do
		if [ $(( $(now_ms) - _wt0 )) -ge "$_wms" ]; then
			miss "setup: $_wwhat (after $_wms ms)"
			return 1
		fi
		usleep 50000
	done
	TOOK=$(( $(now_ms) - _wt0 ))
}

# check_at MS LABEL: MS ms after the owner went (T_GONE), everything as in
# the baseline; the figures on one line.
check_at() {
	_w=$(( T_GONE + $1 - $(now_ms) ))
	[ "$_w" -le 0 ] || usleep $(( _w * 1000 ))
	_l="$2 (at +$(( $(now_ms) - T_GONE )) ms)"
	_on=$(online)
	[ "$_on" = "$base_online" ] || miss "$_l: online $_on (want $base_online)"
	echo "   ."	# IRQ 4 interrupts: an affinity pending for it takes effect
	if irq_check >/tmp/irq.diff; then
		_irqs="IRQs as before ($IRQ_ELSEWHERE in effect elsewhere within their affinity)"
	else
		_irqs="$(wc -l </tmp/irq.diff) IRQs not as before"
		while read -r _dl; do miss "$_l: $_dl"; done </tmp/irq.diff
	fi
	_m=$(mod_state)
	case $_m in
	"owner_pid=0 emulate_on=0 parked=[] lent=[] "*) ;;
	*) miss "$_l: module $_m (want no owner, no emulation, nothing parked or lent)" ;;
	esac
	shares _s 2000 $pin
	_pct=$(( _s * 100 / base_share ))
	[ $(( _s * 100 )) -ge $(( base_share * 95 )) ] ||
		miss "$_l: the spinner on CPU 2 got $_s ‰ = $_pct % of its baseline (want >= 95 %)"
	echo "   $_l: online $_on; $_irqs; spinner on CPU 2 $_s ‰ = $_pct % of its baseline; sched_ext $(state); module $_m"
}
# watch_online MS: until MS ms after T_GONE, the online CPUs every 200 ms:
# any change is a failure (a pending park that went on after all).
watch_online() {
	_seen=
	while [ $(( $(now_ms) - T_GONE )) -lt "$1" ]; do
		_on=$(online)
		if [ "$_on" != "$base_online" ] && [ -z "$_seen" ]; then
			_seen=1
			miss "online $_on at +$(( $(now_ms) - T_GONE )) ms (want $base_online throughout)"
		fi
		usleep 200000
	done
}
# after_gone: the checks at +2 s and +LATE_MS, the CPUs watched in between.
# 5 s where the case left no park pending: nothing else the module does
# waits longer than an emulation period (100 ms) or the release's cleanup;
# case b, whose pending park has a 15 s hold-off, looks at +30 s.
LATE_MS=5000
after_gone() {
	check_at 2000 "+2 s"
	watch_online $LATE_MS
	check_at $LATE_MS "+$((LATE_MS / 1000)) s"
}
# gone_by_kill: kill -9 of the agent; T_GONE is then. The tagged spinner
# goes too, so that the checks run under the baseline's load, but only once
# the kernel disabled the scheduler (1.8 s at most): its exit while the
# dying policy still ran would end the lend by the policy's own split, and
# the case would test that instead of the release (it did: case d passed
# before ABI 3 that way).
gone_by_kill() {
	echo "   before the kill: online $(online); IRQ $irq on $(cat /proc/irq/$irq/smp_affinity_list); module $(mod_state)"
	kill -9 "$AGENT_PID"
	T_GONE=$(now_ms)
	while [ "$(state)" != disabled ] && [ $(( $(now_ms) - T_GONE )) -lt 1800 ]; do usleep 20000; done
	echo "   sched_ext $(state) at +$(( $(now_ms) - T_GONE )) ms; the tagged task ends now"
	end_tagged
	wait "$AGENT_PID" 2>/dev/null
	AGENT_PID=
}
start_tagged() {
	taskset 0x3 spin -g /sys/fs/cgroup/seq 3000 >/dev/null &
	tagged=$!
}
end_tagged() {
	[ -n "$tagged" ] || return 0
	kill "$tagged" 2>/dev/null
	wait "$tagged" 2>/dev/null
	tagged=
}
lent_1_to_0() { proxy_ctl stats | grep -q '^cpu=1 proxied_by=0 '; }
# A level-1 object on [0, 1] lending CPU 1 through the module, IRQ 4 moved
# off it to the representative.
object_with_irq_moved() {
	start_tagged
	wait_for 30000 "CPU 1 never lent to 0 through the module" lent_1_to_0 || return 1
	wait_for 30000 "IRQ $irq not moved off lent CPU 1" irq_aff_is 0 || return 1
	echo "   object on [0, 1]: CPU 1 lent to 0, IRQ $irq moved to 0 after $TOOK ms"
}

# put_back: undo by hand what a case left (nothing, once the release does
# its work), and say what it was.
put_back() {
	_left=
	if [ -n "$AGENT_PID" ]; then
		kill -0 "$AGENT_PID" 2>/dev/null && _left="$_left the agent still running;"
		kill -9 "$AGENT_PID" 2>/dev/null
		wait "$AGENT_PID" 2>/dev/null
		AGENT_PID=
	fi
	[ -z "$PC_PID" ] || pc_kill
	[ -z "$HOG" ] || { _left="$_left the RT hog;"; hog_off; }
	end_tagged
	until_ok 30000 "sched_ext still $(state) after case ($CASE)" sh -c '[ "$(cat /sys/kernel/sched_ext/state)" = disabled ]'
	if grep -q "^chameleon_proxy " /proc/modules; then
		_m=$(mod_state)
		case $_m in
		"owner_pid=0 emulate_on=0 parked=[] lent=[] "*) ;;
		*) _left="$_left module $_m;" ;;
		esac
		# One-shot: it claims (nobody owns the module now), resets, and
		# its exit releases.
		_r=$(proxy_ctl reset 2>&1) || _left="$_left RESET refused ($_r);"
	else
		_left="$_left module not loaded;"
		insmod "$ko" || fail "insmod again failed"
	fi
	# RESET's unpark brings back what the module offlined: give it time.
	_t=$(now_ms)
	while [ "$(online)" != "$base_online" ] && [ $(( $(now_ms) - _t )) -lt 5000 ]; do usleep 50000; done
	for _cpu in 1 2 3; do
		[ "$(cat /sys/devices/system/cpu/cpu$_cpu/online)" = 1 ] && continue
		_left="$_left CPU $_cpu offline after RESET;"
		echo 1 >/sys/devices/system/cpu/cpu$_cpu/online || fail "cannot bring CPU $_cpu back online"
	done
	while read -r n a e; do
		_c=$(cat /proc/irq/$n/smp_affinity_list 2>/dev/null)
		[ "${_c:--}" = "$a" ] && continue
		_left="$_left IRQ $n on ${_c:--} after RESET;"
		echo "$a" >/proc/irq/$n/smp_affinity_list 2>/dev/null
	done </tmp/irq.base
	wait_online "$base_online" 10000 "putting back after case ($CASE)"
	_c=$(sed -n "s/^$irq \([0-9]*\) .*/\1/p" /tmp/irq.base)
	until_ok 10000 "IRQ $irq not back in effect on CPU $_c after case ($CASE)" irq_eff_is $_c
	echo "   put back after case ($CASE):${_left:- nothing}"
}

# running PID: PID is there and not a zombie (which has released its files).
running() { kill -0 "$1" 2>/dev/null && ! grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; }

# start_raw ARGS...: the agent in the background, not waited for (cases e
# and f, where it is to die on its own or before it attached).
start_raw() {
	scx_chameleon --watchdog-timeout-ms 5000 "$@" >"$AGENT_LOG" 2>&1 &
	AGENT_PID=$!
}

# --- Cases ---

case_a() {
	begin a 1 "--emulate high, a level-1 object (tax 0.01), kill -9"
	start_agent --events --emulate high --tag "$TAG"
	object_with_irq_moved || return
	[ "$(stat_of emulate_on)" = 1 ] || { miss "setup: emulation not on"; return; }
	gone_by_kill
	after_gone
	# The next agent says what the first one left (its claim reports what
	# the release undid).
	start_agent
	_said=$(grep -o 'a previous owner went away.*' "$AGENT_LOG" | head -n 1)
	[ -n "$_said" ] || miss "the next agent did not say what the killed one had left"
	echo "   the next agent: ${_said:-nothing}"
	stop_agent
}

case_b() {
	begin b 3 "park 3, hold-off 15 s (pending), kill -9 within it"
	start_agent
	get out scx_chameleon park 3 --holdoff-ms 15000
	echo "   $out"
	proxy_ctl stats | grep -q "^cpu=3 .* parked=1 .* pending=1 " || { miss "setup: CPU 3 not pending offline in the module"; return; }
	wait_for 30000 "IRQ $irq not moved off parked CPU 3" irq_not_on 3 || return
	gone_by_kill
	check_at 2000 "+2 s"
	watch_online 16000
	check_at 16000 "+16 s (past the hold-off)"
	watch_online 30000
	check_at 30000 "+30 s"
}

case_c() {
	begin c 3 "park 3, hold-off 0, kill -9 once CPU 3 is offline (right end state: 0-3)"
	start_agent
	get out scx_chameleon park 3 --holdoff-ms 0
	echo "   $out"
	wait_for 10000 "CPU 3 not offline after park 3 with hold-off 0" \
		sh -c '[ "$(cat /sys/devices/system/cpu/online)" = 0-2 ]' || return
	gone_by_kill
	after_gone
}

case_d() {
	begin d 1 "a level-1 object (tax 0.01), IRQ $irq moved off the lent CPU, kill -9"
	start_agent --events --tag "$TAG"
	object_with_irq_moved || return
	gone_by_kill
	after_gone
}

case_e() {
	begin e 1 "the agent panics in its main loop (--test-panic-after-ms 1500), --emulate high"
	start_raw --emulate high --test-panic-after-ms 1500
	_t0=$(now_ms) _em= _en=
	# Until it is gone (a zombie has released its files): what it made.
	while running "$AGENT_PID"; do
		if [ $(( $(now_ms) - _t0 )) -ge 60000 ]; then
			miss "setup: the agent still running 60 s after its start (no panic)"
			return
		fi
		[ "$(stat_of emulate_on)" = 1 ] && _em=1
		[ "$(state)" = enabled ] && _en=1
		usleep 20000
	done
	T_GONE=$(now_ms)
	wait "$AGENT_PID"
	_rc=$?
	AGENT_PID=
	echo "   agent gone $(( T_GONE - _t0 )) ms after its start, exit status $_rc; emulation seen on: ${_em:-no}; scheduler seen enabled: ${_en:-no}"
	if ! grep -q "panicked" "$AGENT_LOG"; then
		miss "setup: the agent did not panic (exit $_rc): $(tail -n 3 "$AGENT_LOG" | tr '\n' '|')"
		return
	fi
	grep -m 1 "panicked" "$AGENT_LOG" | sed 's/^/   agent: /'
	[ -n "$_em" ] || miss "setup: emulation never seen on before the panic"
	after_gone
}

# The last one is "as soon as the module shows the emulation on": under TCG
# the agent turns it on (after attaching) several seconds after its start,
# later than any fixed delay here.
case_f() {
	begin f 1 "kill -9 at 0, 100, 300 ms after starting --emulate high, and as soon as emulation is on"
	for _d in 0 100 300 emulating; do
		_lbl="$_d ms"
		[ "$_d" != emulating ] || _lbl="at emulation on"
		echo "   -- kill -9: $_lbl"
		start_raw --emulate high
		case $_d in
		0) ;;
		emulating)
			_t0=$(now_ms)
			until [ "$(stat_of emulate_on)" = 1 ]; do
				if ! running "$AGENT_PID" || [ $(( $(now_ms) - _t0 )) -ge 60000 ]; then
					miss "setup: emulation never on ($(tail -n 2 "$AGENT_LOG" | tr '\n' '|'))"
					break
				fi
				usleep 20000
			done
			echo "   emulation on $(( $(now_ms) - _t0 )) ms after the start"
			;;
		*) usleep $(( _d * 1000 )) ;;
		esac
		kill -9 "$AGENT_PID"
		T_GONE=$(now_ms)
		wait "$AGENT_PID" 2>/dev/null
		AGENT_PID=
		echo "   killed: sched_ext $(state); module $(mod_state); the agent's last line: $(tail -n 1 "$AGENT_LOG" | cut -c1-120)"
		check_at 2000 "$_lbl: +2 s"
		watch_online $LATE_MS
		check_at $LATE_MS "$_lbl: +$((LATE_MS / 1000)) s"
		put_back
	done
}

case_g() {
	begin g 1 "clean stop (SIGTERM), then rmmod at once, no retry"
	start_agent --events --emulate high --tag "$TAG"
	object_with_irq_moved || return
	end_tagged
	kill -TERM "$AGENT_PID"
	wait "$AGENT_PID"
	_rc=$?
	T_GONE=$(now_ms)
	AGENT_PID=
	[ "$_rc" = 0 ] || miss "agent exited $_rc after SIGTERM"
	_ref=$(cat /sys/module/chameleon_proxy/refcnt 2>/dev/null)
	if _out=$(rmmod chameleon_proxy 2>&1); then
		echo "   rmmod right after the exit: ok (refcnt was $_ref)"
	else
		miss "rmmod right after the agent's exit (refcnt $_ref): $_out"
		until_ok 30000 "rmmod still refused 30 s after the agent's exit (refcnt $(cat /sys/module/chameleon_proxy/refcnt 2>/dev/null))" \
			rmmod chameleon_proxy 2>/dev/null
		echo "   rmmod succeeded $(( $(now_ms) - T_GONE )) ms after the exit"
	fi
	insmod "$ko" || fail "insmod again failed"
	after_gone
}

case_m() {
	begin m 3 "no agent: a proxy_ctl session parks 3 (hold-off 0), killed once 3 is offline"
	pc_open
	get out pc pid
	echo "   session: ${out#ok }"
	pc park 3 0 >/dev/null || { miss "setup: park 3 from the session refused"; return; }
	wait_for 10000 "CPU 3 not offline after the session's park 3" \
		sh -c '[ "$(cat /sys/devices/system/cpu/online)" = 0-2 ]' || return
	echo "   before the kill: online $(online); module $(mod_state)"
	pc_kill
	T_GONE=$(now_ms)
	check_at 2000 "+2 s"
}

# hog_on / hog_off: an RT hog on CPU 1, for case n. RT throttling off, and
# CPU 1's fair server too (a deadline server that runs fair tasks 50 ms a
# second under any RT load: with it, CPU 1 went offline in under 1.5 s with
# the hog on it); the hog's 20 s bound stays under the hung-task and
# workqueue-lockup reports (30 s).
HOG= FS=/sys/kernel/debug/sched/fair_server/cpu1/runtime FS0=
hog_on() {
	rt_throttling_off
	FS0=$(cat "$FS" 2>/dev/null)
	[ -z "$FS0" ] || echo 0 >"$FS" || miss "setup: cannot stop CPU 1's fair server"
	spin -f 50 -c 1 20 >/dev/null 3>&- 4<&- &
	HOG=$!
	usleep 300000
}
hog_off() {
	[ -n "$HOG" ] || return 0
	kill "$HOG" 2>/dev/null
	wait "$HOG" 2>/dev/null
	HOG=
	# The fair server takes its runtime back once CPU 1 is up again: the
	# write fails with EBUSY while it is offline, and a park the hog held
	# up may take CPU 1 down only now, before the module's release brings
	# it back (CPU 1 online when the hog ends is no sign): the write is
	# retried for up to 10 s.
	_ht=$(now_ms)
	until [ -z "$FS0" ] || echo "$FS0" 2>/dev/null >"$FS"; do
		[ $(( $(now_ms) - _ht )) -lt 10000 ] ||
			{ miss "cannot restore CPU 1's fair server ($FS0; online $(online))"; break; }
		usleep 50000
	done
	restore
}
# park1_hung: the session parks 1 (hold-off 0); 1.5 s later CPU 1 must
# still be online: its remove_cpu() waits for the hog. (Read from the
# online mask: cpu1/online waits for the device lock, which the offline
# holds.)
park1_hung() {
	pc park 1 0 >/dev/null || { miss "setup: the session's park of 1 refused"; return 1; }
	usleep 1500000
	[ "$(online)" = "$base_online" ] ||
		{ miss "setup: online $(online) with the hog on CPU 1: remove_cpu() did not wait"; return 1; }
	echo "   park 1 (hold-off 0) with the hog on CPU 1: still online 1.5 s later; module $(mod_state)"
}
proc_state() { sed -n 's/^State:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null; }
# killed_within PID WHAT: PID waits in the module (for a remove_cpu() that
# does not return); kill -9 must end it within 3 s.
killed_within() {
	if ! running "$1"; then
		miss "setup: $2 returned before the offline it waits for: $(cat /tmp/n.out 2>/dev/null)"
		return 1
	fi
	_st=$(proc_state "$1") _wc=$(cat "/proc/$1/wchan" 2>/dev/null)
	kill -9 "$1"
	_kt=$(now_ms)
	while running "$1" && [ $(( $(now_ms) - _kt )) -lt 3000 ]; do usleep 20000; done
	if running "$1"; then
		miss "$2: still '$(proc_state "$1")' in $(cat "/proc/$1/wchan" 2>/dev/null) 3 s after kill -9 (unkillable while remove_cpu() waits)"
	else
		echo "   $2 (was '$_st' in $_wc): gone $(( $(now_ms) - _kt )) ms after kill -9"
	fi
}
# n_settle: the hog ends; the offline completes and the release brings CPU 1
# back: as in the baseline (check_at) 5 s later.
n_settle() {
	T_GONE=$(now_ms)
	hog_off
	check_at 5000 "+5 s after the hog ended"
}

case_n() {
	begin n 1 "no agent: RESET and CLAIM waiting for a remove_cpu(1) that an RT hog holds up, killed"
	echo "   (1) the owner's RESET"
	hog_on
	pc_open
	if park1_hung; then
		(pc reset >/tmp/n.out 2>&1) &
		_sub=$!
		usleep 1000000
		killed_within "$PC_PID" "the session in RESET"
		# Its reader, blocked on the session's replies, ends with it.
		kill "$_sub" 2>/dev/null
		wait "$_sub" 2>/dev/null
	fi
	pc_kill
	n_settle
	echo "   (2) a one-shot CLAIM after the owner's release"
	hog_on
	pc_open
	if park1_hung; then
		pc_kill
		proxy_ctl claim >/tmp/n.out 2>&1 &
		_cl=$!
		usleep 1000000
		killed_within "$_cl" "the one-shot CLAIM"
		wait "$_cl" 2>/dev/null
	else
		pc_kill
	fi
	n_settle
}

# --- Baseline ---

# IRQ 4 on CPU 1 in the baseline (each case puts it where it needs it).
echo 1 >/proc/irq/$irq/smp_affinity_list || fail "cannot put IRQ $irq on CPU 1"
until_ok 10000 "IRQ $irq not in effect on CPU 1" irq_eff_is 1

spin -c 2 3000 >/dev/null &
pin=$!
sleep 1
base_online=$(online)
[ "$base_online" = 0-3 ] || fail "online $base_online at the start"
irq_table >/tmp/irq.base
shares base_share 2000 $pin
[ "$base_share" -ge 500 ] || fail "baseline: the spinner on CPU 2 got $base_share ‰, too little to compare with"
ok "baseline: online $base_online; $(wc -l </tmp/irq.base) IRQs; the spinner on CPU 2 gets $base_share ‰ of it (schedstat, 2 s)"
while read -r n a e; do
	h=$(ls /proc/irq/$n | grep -v -e affinity -e node -e spurious | head -n 1)
	[ -z "$h" ] || echo "   IRQ $n ($h): affinity $a, in effect $e"
done </tmp/irq.base

for c in $CASES; do
	case $c in
	a | b | c | d | e | f | g | m | n) ;;
	*) fail "no case '$c' (CASES: a b c d e f g m n)" ;;
	esac
	"case_$c"
	case_end
done

kill $pin
wait $pin 2>/dev/null
echo "=== summary$summary"
[ -z "$failed_cases" ] || fail "cases failed:$failed_cases (each one's FAILED lines above)"
ok "every case: online CPUs and IRQ affinities as before at +2 s and +5 s (+30 s after a pending park), the spinner on CPU 2 at >= 95 % of its baseline"
pass
