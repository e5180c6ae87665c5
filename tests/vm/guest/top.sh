#!/bin/sh
# `scx_chameleon top` in tmux: shows the fused object and fuse events by
# name (the tagged cgroup's path, the spinner's comm beside its pid, times in
# human units, no raw nanoseconds), the per-cgroup view (key c) and a filter
# by cgroup path, says DISCONNECTED when the agent dies instead of crashing,
# reconnects when it comes back, shows the history band and (key v) one row
# per node, and `q` exits 0 with the terminal restored. The screen is saved
# to the log between "--- screen ---" and "--- end of screen ---".
. /opt/chameleon/guest/lib.sh

make_cgroup seq
scx_chameleon tag seq --level 1 >/dev/null || fail "tag failed"
start_agent
spin -g /sys/fs/cgroup/seq 40 >/dev/null &
s=$!
export TERM=xterm LANG=C.UTF-8
tmux -u new-session -d -s top -x 120 -y 35 "scx_chameleon top; echo TOP_EXIT=\$? >/tmp/top.rc; sleep 100" ||
	fail "tmux did not start"
screen() { tmux -u capture-pane -p -t top >/tmp/screen; }
# wait_screen PATTERN WHAT [SECONDS]: until the pane shows PATTERN (10 s).
wait_screen() {
	t0=$(now_ms)
	until screen && grep -q "$1" /tmp/screen; do
		[ $(( $(now_ms) - t0 )) -lt $(( ${3:-10} * 1000 )) ] || { cat /tmp/screen; fail "$2"; }
		sleep 0.3
	done
}
# The grid is a snapshot (status file, once a second) and tmux, top and the
# agent are untagged load that may split the object (fused 40-65 % with top
# running before representatives were kept): give it up to 30 snapshots.
wait_screen "0:rep $s (spin)" "the CPU grid does not show cpu0 running pid $s (spin) fused" 30
# A fused representative stays its owner's: the object may have fused once,
# before top connected, and never split since. A stop and continue of the
# task splits it (sleep) and fuses it again while top watches.
kill -STOP $s
sleep 0.3
kill -CONT $s
# An event line: time, kind, cpu, pid (comm), cgroup path, figures in human units.
unit='[0-9][0-9.]* \(ns\|µs\|ms\|s\)'
wait_screen "$unit fuse  *cpu 0  *$s (spin)  */seq  cpus 0,1  latency [^0-9]*$unit" "no fuse event line by name with human times"
# The stop gave the object back; the table shows it again at the next snapshot.
wait_screen "│$s (spin)  */seq  .*2 \[0, 1\]" "the object table lacks $s (spin) in /seq on [0, 1]"
! grep -q '_ns=' /tmp/screen || { cat /tmp/screen; fail "raw nanoseconds on the screen"; }
wait_screen "split  *cpu 0  *$s (spin)  */seq  [a-z]*  fused $unit" "no split line with its fused time"
ok "top shows cpu0 rep $s (spin), cpu1 lent, the object in /seq and fuse events in human units"
echo "--- screen ---"
cat /tmp/screen
echo "--- end of screen ---"

# The per-cgroup view: /seq with its tag (level 1), its object and 2 CPUs.
tmux -u send-keys -t top c
# (path, level, weight, tax, objects, CPUs, fused, fuses; the object may
# split and fuse again meanwhile, so up to 30 snapshots)
wait_screen "│/seq  *1  *[0-9a-z]*  *[^ ]*  *1  *2  *[0-9]*%  *[0-9]" "c did not show /seq's row (level 1, 1 object, 2 CPUs)" 30
grep -q " tagged cgroups, last 5.00 s (c: execution objects) " /tmp/screen || { cat /tmp/screen; fail "no per-cgroup title"; }
ok "c: $(sed -n 's/^│\(\/seq [^│]*\)│.*/\1/p' /tmp/screen | tr -s ' ')"
echo "--- screen (c: per cgroup) ---"
cat /tmp/screen
echo "--- end of screen ---"
tmux -u send-keys -t top c
# A filter by path: another cgroup's hides /seq's lines, /seq's keeps them.
tmux -u send-keys -t top / /other Enter
wait_screen "filter: cgroups /other/\*" "the path filter is not shown"
! grep -q "│$s (spin)" /tmp/screen || { cat /tmp/screen; fail "/other still shows $s's object"; }
tmux -u send-keys -t top / seq Enter
wait_screen "filter: cgroups /seq/\*" "the path filter is not shown"
wait_screen "│$s (spin)  */seq" "/seq's filter hides its object"
tmux -u send-keys -t top Escape
wait_screen "connected  fuse/s [0-9]*  split/s [0-9]*  kernel work on lent CPUs [0-9]*  ? help" "Esc did not clear the filter"
ok "filter by cgroup path: /other hides $s, seq keeps it, Esc clears"

kill -9 "$AGENT_PID"
wait_screen "DISCONNECTED" "no disconnected state after the agent died"
[ -z "$(cat /tmp/top.rc 2>/dev/null)" ] || fail "top exited when the agent died: $(cat /tmp/top.rc)"
ok "agent killed: top shows DISCONNECTED and keeps running"
wait_state disabled 2000 >/dev/null || fail "scheduler still enabled"
# Gone for good before the next one starts: the scheduler is disabled as the
# dying agent's files close, its instance lock a moment later.
wait "$AGENT_PID" 2>/dev/null
start_agent
wait_screen "connected  fuse/s" "top did not reconnect"
ok "agent back: top reconnected"

# The history band (a sample a second, '·' while the agent was gone) and the
# node view: one row for the VM's one LLC, then back to the grid.
wait_screen "last [1-9][0-9]*s" "no history band"
grep -q "fused CPUs" /tmp/screen || { cat /tmp/screen; fail "no fused-CPUs sparkline"; }
tmux -u send-keys -t top v
wait_screen " node 0  cpus [0-9,-]* *rep [0-9]" "v did not show one row per node"
wait_screen " node 0 .*  $s (spin) /seq" "the node row does not name its object's owner" 30
nodes=$(scx_chameleon status --json | sed -n '/^  "nodes": \[/,/^  \]/p' | grep -c '^    \[')
[ "$(grep -c ' node [0-9]* *cpus ' /tmp/screen)" = "$nodes" ] || { cat /tmp/screen; fail "not one row per node ($nodes)"; }
! grep -q " 0:rep \| 0:native \| 0:idle " /tmp/screen || { cat /tmp/screen; fail "grid cells in the node view"; }
ok "history band shown; v: $(grep ' node 0 ' /tmp/screen | tr -s ' │' ' ' | cut -c1-100)"
tmux -u send-keys -t top v
wait_screen " CPUs (v: one row per node) " "v did not go back to the grid"

tmux -u send-keys -t top q
t0=$(now_ms)
until [ -s /tmp/top.rc ]; do
	[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "q did not exit top"
	sleep 0.2
done
[ "$(cat /tmp/top.rc)" = "TOP_EXIT=0" ] || fail "top exited with $(cat /tmp/top.rc)"
[ "$(tmux -u display -p -t top '#{alternate_on}')" = 0 ] || fail "alternate screen left on"
[ "$(tmux -u display -p -t top '#{cursor_flag}')" = 1 ] || fail "cursor left hidden"
ok "q: exit status 0, alternate screen off, cursor visible"
tmux -u kill-server
kill $s
stop_agent
pass
