#!/bin/sh
# The guest tests' helpers (tests/vm/guest/lib.sh) under busybox sh, as the
# guest runs them: each case prints "ok NAME" or "not ok NAME: why"
# (tests/run counts them as host::guest_lib::NAME).
#
#   busybox sh tests/host/guest_lib_test.sh LIB_SH TOOLS_DIR
#
# Each case runs in its own shell, since the helpers end a failed test with
# exit 1: "fails" means that shell exited 1 with a FAIL line.
lib=$1
PATH=$2:$PATH
export PATH

# case NAME WANT(pass|fail) SCRIPT: run SCRIPT after sourcing lib.sh.
case_() {
	out=$(TEST=t sh -c ". '$lib'; $3" 2>&1)
	rc=$?
	if [ "$2" = pass ]; then
		[ "$rc" = 0 ] && echo "ok $1" || echo "not ok $1: exit $rc: $out"
	else
		if [ "$rc" = 1 ] && echo "$out" | grep -q "^FAIL t: "; then
			echo "ok $1"
		else
			echo "not ok $1: exit $rc, want a FAIL: $out"
		fi
	fi
}

# The trap get() exists for: a fail inside $( ) ends the subshell only, and
# `set -- $(...) || fail` goes on with the FAIL text as the figures.
case_ subshell_trap_is_real pass '
	f() { fail "inside"; }
	set -- $(f) || fail "never reached"
	[ "$1" = FAIL ] || exit 3'
case_ get_propagates_a_fail_inside fail '
	f() { fail "inside"; }
	get r f
	exit 0'
case_ get_fails_on_a_nonzero_exit fail 'get r sh -c "exit 4"; exit 0'
case_ get_keeps_the_output pass '
	get r sh -c "echo 1 2; echo 3"
	set -- $r
	[ "$#" = 3 ] && [ "$3" = 3 ] || exit 3'
case_ shares_of_a_gone_task_fail fail 'shares s 50 999999999; exit 0'
case_ shares_of_an_absent_cpu_fail fail 'shares s 50 cpu4096; exit 0'
case_ shares_in_range pass '
	shares s 200 $$ cpu0
	set -- $s
	[ "$#" = 2 ] && [ "$1" -ge 0 ] && [ "$1" -le 1050 ] && [ "$2" -ge 0 ] && [ "$2" -le 1050 ] || exit 3'
case_ idle_over_sets_a_percentage pass '
	idle_over i 0 0.2
	[ "$i" -ge 0 ] && [ "$i" -le 105 ] || exit 3'
case_ accounts_for_a_whole_window pass 'accounts_for cpu1 470 530 >/dev/null'
# contention.log at tax 1, measured against the thinned /proc/stat total:
# idle 71 %, the pinned spinner 53 % by schedstat.
case_ accounts_for_refuses_124_percent fail 'accounts_for cpu1 710 530'
case_ accounts_for_refuses_a_missing_half fail 'accounts_for cpu1 200 500'
# wait_log_after: a line from before the mark does not answer; one after does.
case_ wait_log_after_skips_old_lines fail '
	AGENT_LOG=$(mktemp); echo "fuse cpu=0" >"$AGENT_LOG"
	m=$(log_mark)
	wait_log_after "$m" "fuse cpu=0" 200 "no new fuse"
	exit 0'
case_ wait_log_after_sees_new_lines pass '
	AGENT_LOG=$(mktemp); echo "fuse cpu=0" >"$AGENT_LOG"
	m=$(log_mark)
	(usleep 100000; echo "fuse cpu=0 again" >>"$AGENT_LOG") &
	wait_log_after "$m" "fuse cpu=0 again" 5000 "no new fuse"'
# The proxy_ctl session helpers, against a stand-in `proxy_ctl session` that
# answers "ok ARGS" to `ok ARGS` and "err EINVAL" to anything else.
pcfake=$(mktemp -d)
cat >"$pcfake/proxy_ctl" <<'FAKE'
#!/bin/sh
[ "$1" = session ] || exit 2
while read -r c a; do
	case $c in ok) echo "ok${a:+ $a}" ;; *) echo "err EINVAL" ;; esac
done
FAKE
chmod +x "$pcfake/proxy_ctl"
PATH=$pcfake:$PATH
case_ pc_round_trips pass '
	pc_open
	r=$(pc ok 1 2) && [ "$r" = "ok 1 2" ] || exit 3
	r=$(pc ok) && [ "$r" = ok ] || exit 4
	r=$(pc bad 1) && exit 5
	[ "$r" = "err EINVAL" ] || exit 6
	pid=$PC_PID
	pc_close || exit 7
	[ -z "$PC_PID" ] && ! kill -0 $pid 2>/dev/null || exit 8'
case_ pc_after_kill_is_gone pass '
	pc_open
	pid=$PC_PID
	pc_kill
	kill -0 $pid 2>/dev/null && exit 3
	pc_open
	kill -9 $PC_PID
	# Not waited for: a zombie (holding no file any more), or reaped.
	while kill -0 $PC_PID 2>/dev/null && ! grep -q "^State:.*Z" /proc/$PC_PID/status 2>/dev/null; do :; done
	r=$(pc ok 1) && exit 4
	[ "$r" = "err GONE" ] || exit 5
	pc_kill'
case_ pc_without_a_session_fails fail 'pc ok; exit 0'
rm -rf "$pcfake"

# now_ms reads /proc/uptime in the shell: the same milliseconds as awk's.
case_ now_ms_is_uptime_in_ms pass '
	a=$(now_ms); b=$(awk "{ printf \"%d\", \$1 * 1000 }" /proc/uptime)
	d=$(( b - a )); [ "$d" -ge 0 ] && [ "$d" -le 1000 ] || { echo "now_ms $a, awk $b"; exit 3; }'
# nap waits (a read that returned at once would make every poll a busy loop).
case_ nap_waits pass '
	a=$(now_ms); nap 0.3; b=$(now_ms)
	[ $(( b - a )) -ge 250 ] || { echo "nap 0.3 took $(( b - a )) ms"; exit 3; }'
case_ state_reads_the_file pass '
	STATE=$(mktemp); echo enabled >"$STATE"
	[ "$(state)" = enabled ] || exit 3
	OPS=/nonexistent; [ -z "$(ops)" ] || exit 4'
