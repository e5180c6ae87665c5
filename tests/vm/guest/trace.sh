#!/bin/sh
# `scx_chameleon trace -d 3 -o FILE`: a Perfetto trace of borrowing. A tagged
# spinner A (level 1, tax 1) shares its pair with B pinned to CPU 1, so its
# object fuses and splits all along; C, tagged too, lives 1 s inside the
# window. The file is decoded by Debian's protoc against Perfetto's published
# trace proto (perfetto-decode, put in the guest by tests/run: --with
# $(scripts/protoc.sh guest-decoder)), independently of our Rust code, and
# the text must have: a track per CPU, fused and lent slices naming A, every
# slice begun ended on its own track and in order, timestamps in order, the
# monotonic clock declared. CPU 1's lent share in the trace is checked
# against the kernel (/proc/stat's absolute idle, B's schedstat, one window).
# Then A alone, fused with perhaps no event in the window, must still show as
# fused (from the agent's status), and by the kernel run on CPU 0 with CPU 1
# idle. Bad arguments are refused with clear errors and nothing
# written; Ctrl-C or the agent stopping mid-window still leaves a complete
# trace of what came.
. /opt/chameleon/guest/lib.sh

command -v perfetto-decode >/dev/null ||
	fail "no perfetto-decode in the guest (tests/run: --with \$(scripts/protoc.sh guest-decoder))"

# refused MESSAGE ARGS...: scx_chameleon trace ARGS fails, not a panic, saying MESSAGE.
refused() {
	want=$1; shift
	out=$(scx_chameleon trace "$@" 2>&1); rc=$?
	[ "$rc" != 0 ] || fail "accepted: scx_chameleon trace $*"
	! echo "$out" | grep -q "panicked" || fail "scx_chameleon trace $* panicked: $out"
	echo "$out" | grep -qF -e "$want" || fail "scx_chameleon trace $*: '$out' lacks '$want'"
	ok "refused: trace $* -> $(echo "$out" | grep -F -e "$want" | head -n 1)"
}

# check_trace FILE PID: decode FILE and check it; PID must have fused and lent slices.
check_trace() {
	[ -s "$1" ] || fail "$1 missing or empty"
	perfetto-decode "$1" >"$1.txt" 2>"$1.err" || fail "protoc could not decode $1: $(head -c 300 "$1.err")"
	for cpu in 0 1 2 3; do
		grep -q "^    name: \"cpu $cpu\"$" "$1.txt" || fail "no track descriptor \"cpu $cpu\" in $1"
	done
	grep -q "primary_trace_clock: BUILTIN_CLOCK_MONOTONIC" "$1.txt" || fail "$1 declares no monotonic trace clock"
	# The first packet clears the sequence's state (SEQ_INCREMENTAL_STATE_CLEARED = 1).
	awk '/^packet \{/ { n++ } n == 1 && /^  sequence_flags: 1$/ { ok = 1 } END { exit !ok }' "$1.txt" ||
		fail "the first packet of $1 does not clear the sequence's state"
	grep -q "name: \"fused: spin pid $2 level 1\"" "$1.txt" || fail "no fused slice of pid $2 in $1"
	grep -q "name: \"lent to spin pid $2\"" "$1.txt" || fail "no lent slice of pid $2 in $1"
	begins=$(grep -c "type: TYPE_SLICE_BEGIN" "$1.txt")
	ends=$(grep -c "type: TYPE_SLICE_END" "$1.txt")
	[ "$begins" -gt 0 ] && [ "$begins" = "$ends" ] || fail "$1: $begins slice begins, $ends ends"
	# Per track, in file order (protoc prints a track event's type before its
	# track_uuid): no begin inside an open slice, no end without a begin,
	# nothing left open; packet timestamps never go back.
	set -- $(awk '
		/^  timestamp: / { if ($2 < last) back++; last = $2 }
		/^    type: TYPE_SLICE_BEGIN$/ { d = 1 }
		/^    type: TYPE_SLICE_END$/ { d = -1 }
		/^    type: TYPE_INSTANT$/ { d = 0 }
		/^    track_uuid: / {
			if (d == 1) { if (open[$2]) bad++; open[$2] = 1 }
			if (d == -1) { if (!open[$2]) bad++; open[$2] = 0 }
			d = 0
		}
		END { for (k in open) if (open[k]) left++; print bad + 0, left + 0, back + 0 }' "$1.txt") "$1"
	[ "$1" = 0 ] && [ "$2" = 0 ] || fail "$4: $1 mispaired slice events, $2 slices left open"
	[ "$3" = 0 ] || fail "$4: timestamps go back $3 times"
	ok "$4: decoded by protoc ($(wc -c <"$4") bytes, $(grep -c '^packet {' "$4.txt") packets): tracks cpu 0-3, $begins slices begun and ended in pairs per track, timestamps in order"
}

# slice_share FILE NAME: "CPU PERCENT FIRST LAST" for the CPU with the most
# time in slices named NAME in the decoded trace FILE, as a share of the
# window (FIRST to LAST: its first and last timestamps).
slice_share() {
	awk -v want="$2" '
		/^packet \{/ { ts = ""; uuid = ""; name = ""; type = ""; cpu = "" }
		/^  timestamp: / { ts = $2; if (first == "" || ts < first) first = ts; if (ts > last) last = ts }
		/^    uuid: / { uuid = $2 }
		/^    name: "cpu [0-9]*"$/ { gsub(/"/, "", $3); cpus[uuid] = $3 }
		/^    type: / { type = $2 }
		/^    track_uuid: / { uuid = $2 }
		/^    name: "/ && type != "" { name = substr($0, index($0, "\"") + 1); sub(/"$/, "", name) }
		/^}/ {
			if (type == "TYPE_SLICE_BEGIN" && name == want) open[uuid] = ts
			if (type == "TYPE_SLICE_END" && (uuid in open)) { lent[uuid] += ts - open[uuid]; delete open[uuid] }
		}
		END {
			for (u in lent) if (lent[u] > best) { best = lent[u]; bu = u }
			if (last > first && bu != "") printf "%s %d %s %s\n", cpus[bu], best * 100 / (last - first), first, last
		}' "$1"
}

rm -f /tmp/*.pftrace
refused 'from 1 to 3600' -d 0 -o /tmp/t.pftrace
refused 'from 1 to 3600' -d 3601 -o /tmp/t.pftrace
refused 'from 1 to 3600' -d 1.5 -o /tmp/t.pftrace
echo precious >/tmp/keep.pftrace
refused 'no scx_chameleon agent is running' -d 1 -o /tmp/keep.pftrace
[ "$(cat /tmp/keep.pftrace)" = precious ] || fail "a refused trace touched the existing output file"
[ -z "$(ls -A /tmp | grep -F '.pftrace.')" ] || fail "a refused trace left a temporary file: $(ls -A /tmp)"

make_cgroup seq
start_agent --tag seq=level:1,tax:1
refused '-o /nonexistent/t.pftrace: cannot write a file in /nonexistent' -d 1 -o /nonexistent/t.pftrace
refused 'is a directory' -d 1 -o /tmp
refused 'cannot write a file in /proc' -d 1 -o /proc/t.pftrace

spin -c 1 $LONG >/dev/null &
b=$!
spin -g /sys/fs/cgroup/seq $LONG >/dev/null &
a=$!
sleep 1
scx_chameleon trace -d 3 -o /tmp/t.pftrace >/tmp/trace.out 2>&1 &
t=$!
# C starts 1 s into the window, while the kernel's view of the same 3 s is
# taken (CPU 1's absolute idle and B's schedstat, one window).
(sleep 1; exec spin -g /sys/fs/cgroup/seq 1 >/dev/null) &
c=$!
shares r 3000 $b cpu1
set -- $r
bpm=$1 idlepm=$2
wait $t || fail "trace exited $?: $(cat /tmp/trace.out)"
wait $c
grep -q "^wrote /tmp/t.pftrace (" /tmp/trace.out || fail "no summary line: $(cat /tmp/trace.out)"
ok "$(cat /tmp/trace.out)"
check_trace /tmp/t.pftrace $a
splits=$(grep -c 'name: "split (' /tmp/t.pftrace.txt)
[ "$splits" -gt 0 ] || fail "no split instant in the trace"
# From outside the scheduler, as fuse_tax does it: while CPU 1 is lent to A
# it idles and B (pinned there, always runnable) waits, so over 3 s of the
# trace command's run (its window starts after a connect), B ran about the
# rest of CPU 1's lent share in the trace (schedstat, exact) and CPU 1's
# absolute idle time is at least that share. At tax 1 CPU 1 is lent some 40
# times a second and its idle reads high then (idle + B: 1015 and 1073 ‰ of
# one window here, 1134-1196 ‰ in fuse_tax), so no accounts_for.
get sl slice_share /tmp/t.pftrace.txt "lent to spin pid $a"
set -- $sl
[ "${1:-}" = 1 ] || fail "A's object did not borrow CPU 1 most (${1:-none}): not the scene this test sets"
lent=$2
ok "cpu 1: lent to A $lent % of the window in the trace; by the kernel idle $idlepm ‰ and B ran $bpm ‰ of 3 s"
[ "$idlepm" -ge $(( lent * 10 - 150 )) ] || fail "cpu 1 lent $lent % in the trace but idle only $idlepm ‰ by /proc/stat"
d=$(( 100 - lent - bpm / 10 )); [ $d -lt 0 ] && d=$(( -d ))
[ "$d" -le 15 ] || fail "cpu 1 lent $lent % in the trace but B ran $bpm ‰ by its schedstat"
ok "A (pid $a): $(grep -c "name: \"fused: spin pid $a " /tmp/t.pftrace.txt) fused slices, $(grep -c "name: \"lent to spin pid $a\"" /tmp/t.pftrace.txt) lent; C (pid $c): $(grep -c "name: \"fused: spin pid $c " /tmp/t.pftrace.txt) fused; $splits split instants, reasons: $(sed -n 's/.*name: "split (\([a-z]*\)).*/\1/p' /tmp/t.pftrace.txt | sort | uniq -c | tr -s ' \n' ' ')"

# A alone (B gone): its object stays fused, maybe without a single event in
# the window; it is on the timeline all the same (from the agent's status).
kill $b
wait $b 2>/dev/null
sleep 1
scx_chameleon trace -d 2 -o /tmp/alone.pftrace >/tmp/alone.out 2>&1 &
t=$!
# The kernel's view of the same 2 s: A on CPU 0 (CPU 0's idle + A's
# schedstat make up the window), lent CPU 1 idle.
shares r 2000 $a cpu0 cpu1
wait $t || fail "trace failed: $(cat /tmp/alone.out)"
set -- $r
apm=$1 idle0=$2 idlepm=$3
! grep -q "status was not rewritten" /tmp/alone.out || fail "no fresh status during the window: $(cat /tmp/alone.out)"
ok "$(cat /tmp/alone.out)"
check_trace /tmp/alone.pftrace $a
get sl slice_share /tmp/alone.pftrace.txt "lent to spin pid $a"
set -- $sl
ok "A alone: cpu ${1:-none} lent to it ${2:-0} % of the window; by the kernel A ran $apm ‰, cpu 0 idle $idle0 ‰, cpu 1 idle $idlepm ‰ of 2 s"
[ "${1:-}" = 1 ] && [ "${2:-0}" -ge 80 ] || fail "A alone is not shown fused on cpus 0,1 for most of the window"
accounts_for "A alone: cpu 0 (A's representative)" "$idle0" "$apm"
d=$(( idlepm / 10 - $2 )); [ $d -lt 0 ] && d=$(( -d ))
[ "$d" -le 15 ] || fail "cpu 1 lent $2 % in the trace but idle $idlepm ‰ by /proc/stat"

# Ctrl-C mid-window: what came is written.
scx_chameleon trace -d 60 -o /tmp/int.pftrace >/tmp/int.out 2>&1 &
t=$!
sleep 2
kill -INT $t
wait $t || fail "trace exited $? after SIGINT: $(cat /tmp/int.out)"
grep -q "cut short: interrupted" /tmp/int.out || fail "no note of the interruption: $(cat /tmp/int.out)"
check_trace /tmp/int.pftrace $a

# The agent stops mid-window: the trace ends there, complete.
scx_chameleon trace -d 60 -o /tmp/stop.pftrace >/tmp/stop.out 2>&1 &
t=$!
sleep 2
stop_agent
wait $t || fail "trace exited $? when the agent stopped: $(cat /tmp/stop.out)"
grep -q "cut short: the agent closed the stream" /tmp/stop.out || fail "no note of the agent stopping: $(cat /tmp/stop.out)"
check_trace /tmp/stop.pftrace $a
end_tasks $a
pass
