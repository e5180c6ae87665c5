#!/bin/sh
# The agent as the systemd unit (dist/scx_chameleon.service) runs it. The
# guest has no systemd, so the unit's own lines are carried out as systemd
# does: EnvironmentFile= (VAR=value, quotes removed), RuntimeDirectory=
# (/run/NAME made before the start, removed after the stop), ExecStart= with
# $VAR split on whitespace, KillSignal= to stop, ExecReload=. Checked:
#   - the flags from the environment file reach the agent (its run id in
#     status), it attaches, its socket and status are in the runtime
#     directory the clients use by default;
#   - stop: the agent exits 0, sched_ext disabled; start again: the tag set
#     before with `scx_chameleon tag` is in force and its task gets an object;
#   - restart (stop + start) the same; reload (SIGHUP) keeps it attached;
#   - a crash (SIGKILL) leaves the kernel to the fair class, and the next
#     start (Restart=on-failure) attaches despite the stale lock and socket.
. /opt/chameleon/guest/lib.sh
TEST=service
CG=/sys/fs/cgroup
UNIT=/opt/chameleon/dist/scx_chameleon.service
ENVF=/etc/default/scx_chameleon

key() { sed -n "s/^$1=//p" "$UNIT" | head -n 1; }
for k in EnvironmentFile RuntimeDirectory ExecStart ExecReload KillSignal Restart; do
	[ -n "$(key $k)" ] || fail "the unit has no $k="
done
[ "$(key Restart)" = on-failure ] || fail "Restart=$(key Restart)"
[ "$(key RuntimeDirectory)" = scx_chameleon ] || fail "RuntimeDirectory=$(key RuntimeDirectory): the clients look in /run/scx_chameleon"
# make install fills in the binary's directory (here: where the guest has it).
bindir=$(dirname "$(command -v scx_chameleon)")
exec_start=$(key ExecStart | sed "s|@BINDIR@|$bindir|")
mkdir -p /etc/default
cp /opt/chameleon/dist/scx_chameleon.default "$ENVF"
grep -q '^SCX_CHAMELEON_FLAGS=""' "$ENVF" || fail "the shipped flags file does not set SCX_CHAMELEON_FLAGS"
echo 'SCX_CHAMELEON_FLAGS="--run-id 77 --watchdog-timeout-ms 5000 --events"' >>"$ENVF"

# systemctl start: the environment file's assignments, quotes removed, then
# ExecStart with $VAR split on whitespace (systemd's rule for unquoted $VAR).
svc_start() {
	mkdir -p /run/scx_chameleon
	flags=$(sed -n 's/^SCX_CHAMELEON_FLAGS=//p' "$ENVF" | tail -n 1 | sed 's/^"\(.*\)"$/\1/')
	cmd=$(echo "$exec_start" | sed "s|\\\$SCX_CHAMELEON_FLAGS|$flags|")
	# shellcheck disable=SC2086
	$cmd >"$AGENT_LOG" 2>&1 &
	AGENT_PID=$!
	t0=$(now_ms)
	until [ "$(state)" = enabled ]; do
		agent_alive || fail "$1: the agent exited before attaching: $(tail -n 3 "$AGENT_LOG" | tr '\n' '|')"
		[ $(( $(now_ms) - t0 )) -lt 30000 ] || fail "$1: not enabled within 30 s"
		usleep 10000
	done
	ops_is_chameleon || fail "$1: ops $(ops)"
	# The status is written within a second of attaching.
	t0=$(now_ms)
	until grep -q '"run_id": 77' /run/scx_chameleon/status.json 2>/dev/null; do
		[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "$1: no run id 77 in /run/scx_chameleon/status.json: the flags did not arrive"
		usleep 100000
	done
	[ -S /run/scx_chameleon/control.sock ] || fail "$1: no control socket in the runtime directory"
	ok "$1: attached as the unit runs it ($cmd), pid $AGENT_PID"
}

# systemctl stop: KillSignal, wait (TimeoutStopSec), remove the runtime directory.
svc_stop() {
	kill -"$(key KillSignal | sed 's/^SIG//')" "$AGENT_PID"
	wait "$AGENT_PID"
	rc=$?
	[ "$rc" = 0 ] || fail "$1: the agent exited $rc on $(key KillSignal)"
	[ "$(state)" = disabled ] || fail "$1: state $(state) after the stop"
	rm -rf /run/scx_chameleon
	ok "$1: stopped (exit 0, sched_ext disabled)"
}

# A tagged task holds an object (status, and the kernel has it on the representative).
has_object() {
	t0=$(now_ms)
	until scx_chameleon status | grep -q "^pid $1: .*-> \["; do
		[ $(( $(now_ms) - t0 )) -lt 5000 ] || fail "$2: pid $1 has no object: $(scx_chameleon status | grep "^pid $1")"
		usleep 100000
	done
	ok "$2: the tag is in force: $(scx_chameleon status | grep "^pid $1")"
}

svc_start start
make_cgroup svc
scx_chameleon tag svc --level 1 >/dev/null || fail "cannot tag"
spin -g $CG/svc $LONG >/dev/null &
s=$!
has_object $s start

svc_stop stop
a0=$(run_ns $s); sleep 0.5
[ "$(run_ns $s)" -gt "$a0" ] || fail "stop: the task got no CPU while the scheduler was stopped"
svc_start "start again"
has_object $s "start again"

# restart = stop + start
svc_stop restart
svc_start restart
has_object $s restart

# reload: ExecReload's signal; the agent stays attached, the tag in force.
reload_sig=$(key ExecReload | sed -n 's/.*kill -\([A-Z]*\) .*/\1/p')
[ -n "$reload_sig" ] || fail "ExecReload=$(key ExecReload): no signal"
kill -"$reload_sig" "$AGENT_PID"
sleep 1
agent_alive || fail "reload: the agent died on SIG$reload_sig"
[ "$(state)" = enabled ] || fail "reload: state $(state)"
has_object $s reload

# A crash, then Restart=on-failure's start.
kill -KILL "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null
wait_state disabled 5000 >/dev/null || fail "crash: state $(state) 5 s after SIGKILL"
a0=$(run_ns $s); sleep 0.5
[ "$(run_ns $s)" -gt "$a0" ] || fail "crash: the task got no CPU after the agent died"
ok "crash: sched_ext disabled, the task runs in the fair class"
svc_start "restart after the crash"
has_object $s "restart after the crash"
svc_stop "final stop"
end_tasks $s
scx_chameleon untag svc >/dev/null
pass
