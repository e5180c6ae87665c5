#!/bin/sh
# The rules file (--rules): a bad file stops the start with file:line: field
# (a rule by comm alone among them: anyone can take a comm); a cgroup created
# after the start that a rule matches (by path, and by its processes' comm
# and uid) gets the rule's tag, a process renamed into the comm gets
# nothing, `tags` names the rule as its source, a child inherits it, and the
# task in it gets an object; after the file
# changes, SIGHUP applies the new rules; a bad file on SIGHUP or
# `reload-rules` is refused with line and field and the rules in force stay
# (agent still attached); a stored tag on a rule-matched cgroup wins, and
# untagging gives the cgroup back to its rule; a rule by unit does not reach
# into a delegated subtree (a cgroup chown-ed to uid 1000) unless it says
# delegated = true.
. /opt/chameleon/guest/lib.sh

RULES=/tmp/rules.toml
BAD=/tmp/bad.toml

# wait_tags PATTERN TIMEOUT_MS WHAT: until a line of `scx_chameleon tags`
# matches PATTERN (grep -E); prints the ms it took.
wait_tags() {
	_t0=$(now_ms)
	until scx_chameleon tags 2>/dev/null | grep -qE "$1"; do
		[ $(( $(now_ms) - _t0 )) -lt "$2" ] || fail "$3: $(scx_chameleon tags 2>&1 | tr '\n' '|')"
		usleep 100000
	done
	echo $(( $(now_ms) - _t0 ))
}
tags_line() { scx_chameleon tags 2>/dev/null | grep "^/sys/fs/cgroup/$1 "; }
# mark; ...; wait_new PATTERN TIMEOUT_MS WHAT: wait_log for lines logged since the mark.
mark() { MARK=$(wc -l <"$AGENT_LOG"); }
wait_new() {
	_t0=$(now_ms)
	until tail -n +$(( MARK + 1 )) "$AGENT_LOG" | grep -q "$1"; do
		[ $(( $(now_ms) - _t0 )) -lt "$2" ] || fail "$3"
		usleep 50000
	done
}

# 1. A bad file at start: refused before anything is attached.
cat >$BAD <<'EOF'
[[rule]]
name = "db"
match.cgroup = "/db*"
level = 5
EOF
out=$(scx_chameleon --rules $BAD 2>&1) && fail "started with a bad rules file: $out"
echo "$out" | grep -qF "$BAD:4: rule \"db\": level \"5\": expected an integer 1..=3" || fail "start: message '$out'"
[ "$(state)" = disabled ] || fail "sched_ext is '$(state)' after a refused start"
ok "refused at start: $(echo "$out" | tail -n 1)"
printf '[[rule]]\nname = "w"\nmatch.comm = "pgwork"\nlevel = 1\n' >$BAD
# Bounded: an agent that takes the file attaches and runs on (so did ours
# before issue 32).
out=$(timeout 30 scx_chameleon --rules $BAD 2>&1) && fail "started with a rule by comm alone: $out"
echo "$out" | grep -qF "$BAD:3: rule \"w\": match.comm alone can be spoofed (any process may rename itself: prctl PR_SET_NAME); add match.uid or a path key" ||
	fail "comm alone: message '$out'"
ok "refused at start: $(echo "$out" | tail -n 1)"
out=$(scx_chameleon --rules /tmp/nope.toml 2>&1) && fail "started without its rules file"
echo "$out" | grep -qF "rules file /tmp/nope.toml: No such file" || fail "missing file: message '$out'"
ok "refused at start: $(echo "$out" | tail -n 1)"

# 2. Rules by path and by comm, for cgroups that do not exist yet.
cat >$RULES <<'EOF'
# scx_chameleon rules (VM test rules.sh)
[[rule]]
name = "db"
match.cgroup = "/db*"
level = 1
tax = 0.5

[[rule]]
name = "worker"
match = { comm = "pgwork", uid = 0 }
level = 1
tax = 2
EOF
start_agent --events --rules $RULES
grep -q "rules: 2 from $RULES" "$AGENT_LOG" || fail "the agent did not report its rules"

t_made=$(now_ms)	# (not t0: wait_log uses that)
make_cgroup db1
spin -g /sys/fs/cgroup/db1 $LONG >/dev/null &
a=$!
id=$(stat -c %i /sys/fs/cgroup/db1)
# The agent's own re-matching (each second) must find it: nothing asks it
# before the fuse (`tags` would apply the rules at once).
wait_log "fuse cpu=[0-9]* pid=$a " 4000 "pid $a in db1 (created after the start) did not fuse under the rule's tag"
ok "pid $a fused (seen in the log) $(( $(now_ms) - t_made )) ms after db1 was created"
tags_line db1 | grep -q "^/sys/fs/cgroup/db1 (cgroup $id): v1 level=1 tax=0.50 smt=any (rule \"db\" ($RULES:2))$" ||
	fail "db1 not listed with its rule: $(scx_chameleon tags 2>&1 | tr '\n' '|')"
ok "db1 tagged by rule \"db\": $(tags_line db1)"
make_cgroup db1/sub
wait_tags "^/sys/fs/cgroup/db1/sub \(cgroup [0-9]*\): v1 level=1 tax=0.50 smt=any \(inherited from /sys/fs/cgroup/db1\)$" 3000 \
	"db1/sub does not inherit the rule's tag" >/dev/null
ok "a child inherits: $(tags_line db1/sub)"
sleep 1.2	# the status file is refreshed each second
st=$(scx_chameleon status)
echo "$st" | grep -q "^tag cgroup $id: v1 level=1 tax=0.50 smt=any$" || fail "status lacks the rule's tag: $st"
echo "$st" | grep -q "^pid $a: level 1 weight 100 -> \[[0-9], [0-9]\]$" || fail "status lacks pid $a's object: $st"
ok "status: $(echo "$st" | grep "^pid $a:") / $(echo "$st" | grep "^tag cgroup $id:")"

# By comm: a plain cgroup no path rule matches, tagged once pgwork is in it.
make_cgroup work1
spin -N pgwork -g /sys/fs/cgroup/work1 $LONG >/dev/null &
b=$!
t_made=$(now_ms)
wait_log "DEBUG assign pid=$b .* tax=2.00" 4000 "pid $b (comm pgwork) got no object at tax 2"
ms=$(( $(now_ms) - t_made ))
tags_line work1 | grep -q ": v1 level=1 tax=2.00 smt=any (rule \"worker\" ($RULES:8))$" ||
	fail "work1 not listed with its comm rule: $(scx_chameleon tags 2>&1 | tr '\n' '|')"
ok "work1 tagged by rule \"worker\" (comm pgwork): pid $b assigned at tax 2.00 ${ms} ms after it started"

# A process that renames itself into the rule's comm gains nothing: an
# unprivileged one (uid 1000) beside a root process in a cgroup it shares,
# and one alone in its own cgroup (its uid gives it away). Before: the
# shared cgroup was tagged (one process of the comm, one of the uid).
make_cgroup shared
make_cgroup mine
spin -g /sys/fs/cgroup/shared $LONG >/dev/null &
r=$!
runas 1000 spin -N pgwork $LONG >/dev/null &
u=$!
runas 1000 spin -N pgwork $LONG >/dev/null &
v=$!
usleep 300000
[ "$(cat /proc/$u/comm)" = pgwork ] && [ "$(awk '/^Uid:/ { print $3 }' /proc/$u/status)" = 1000 ] ||
	fail "pid $u is not an unprivileged pgwork: comm $(cat /proc/$u/comm)"
echo $u >/sys/fs/cgroup/shared/cgroup.procs || fail "cannot move pid $u into shared"
echo $v >/sys/fs/cgroup/mine/cgroup.procs || fail "cannot move pid $v into mine"
sleep 3	# three rounds of matching
for c in shared mine; do
	tags_line $c && fail "$c tagged by a process renamed into rule \"worker\"'s comm: $(tags_line $c)"
done
grep -E "DEBUG assign pid=($r|$u|$v) " "$AGENT_LOG" && fail "a task of shared or mine got an object"
ok "renamed into comm pgwork as uid 1000: neither shared (beside a root process) nor mine (alone) tagged, no object"
end_tasks $r $u $v
rmdir /sys/fs/cgroup/shared /sys/fs/cgroup/mine

# 3. The file changes: SIGHUP applies it. db's tax moves, worker goes.
cat >$RULES <<'EOF'
[[rule]]
name = "db"
match.cgroup = "/db*"
level = 1
tax = 0.25
EOF
mark
kill -HUP $AGENT_PID
wait_new "reloaded 1 rules from $RULES" 3000 "SIGHUP did not reload the rules"
wait_tags "^/sys/fs/cgroup/db1 \(cgroup $id\): v1 level=1 tax=0.25 smt=any \(rule \"db\" \($RULES:1\)\)$" 3000 \
	"db1 did not take the new rule" >/dev/null
wait_new "DEBUG assign pid=$a .* tax=0.25" 3000 "pid $a's tax did not follow the new rule"
wait_new "DEBUG unassign pid=$b " 3000 "pid $b kept its object after its rule was removed"
tags_line work1 && fail "work1 still tagged after its rule was removed"
agent_alive || fail "SIGHUP killed the agent"
ok "SIGHUP: db1 at tax 0.25 (pid $a reassigned), work1 untagged (pid $b unassigned), agent alive"

# 4. A bad file: refused on SIGHUP and by reload-rules; the rules in force stay.
cat >$RULES <<'EOF'
[[rule]]
name = "db"
match.cgroup = "/db*"

level = 5
EOF
mark
kill -HUP $AGENT_PID
wait_new "rules not reloaded: $RULES:5: rule \"db\": level \"5\": expected an integer 1..=3" 3000 \
	"SIGHUP with a bad file: no error naming line and field in the log"
ok "SIGHUP refused: $(grep -m1 "rules not reloaded" "$AGENT_LOG" | sed 's/.*rules not reloaded/rules not reloaded/')"
out=$(scx_chameleon reload-rules 2>&1) && fail "reload-rules accepted a bad file: $out"
echo "$out" | grep -qF "$RULES:5: rule \"db\": level \"5\": expected an integer 1..=3" || fail "reload-rules: message '$out'"
ok "reload-rules refused: $out"
printf '[[rule]]\nmatch.cgroup = "/db*"\nlevle = 2\n' >$RULES
out=$(scx_chameleon reload-rules 2>&1) && fail "reload-rules accepted an unknown key: $out"
echo "$out" | grep -q "$RULES:3: .*unknown field \`levle\`" || fail "unknown key: message '$out'"
ok "reload-rules refused: $out"
out=$(runas 65534 scx_chameleon reload-rules 2>&1) && fail "a non-root caller reloaded the rules"
echo "$out" | grep -q "needs root" || fail "non-root reload-rules: message '$out'"
sleep 1.5	# rules are matched again each second: the old ones must still hold
tags_line db1 | grep -q "tax=0.25 smt=any (rule \"db\" ($RULES:1))$" || fail "the rules in force changed: $(tags_line db1)"
[ "$(state)" = enabled ] && ops_is_chameleon && agent_alive || fail "not attached after bad reloads (state $(state))"
ok "old rules still in force ($(tags_line db1)), agent attached"

# 5. A stored tag beats the rule on the same cgroup; untag gives it back.
printf '[[rule]]\nname = "db"\nmatch.cgroup = "/db*"\nlevel = 1\ntax = 0.25\n' >$RULES
out=$(scx_chameleon reload-rules) || fail "reload-rules of a good file: $out"
echo "$out" | grep -q "^reloaded 1 rules from $RULES; [0-9]* cgroups tagged$" || fail "reload-rules: '$out'"
ok "reload-rules: $out"
mark
scx_chameleon tag db1 --level 1 --tax 100 >/dev/null || fail "tag db1"
wait_new "DEBUG assign pid=$a .* tax=100.00" 3000 "the stored tag did not reach pid $a"
sleep 1.5
tags_line db1 | grep -q ": v1 level=1 tax=100.00 smt=any (stored)$" || fail "stored tag not in force over the rule: $(tags_line db1)"
ok "stored beats rule: $(tags_line db1)"
mark
scx_chameleon untag db1 >/dev/null || fail "untag db1"
wait_tags "^/sys/fs/cgroup/db1 \(cgroup $id\): v1 level=1 tax=0.25 smt=any \(rule \"db\"" 3000 \
	"untagged db1 did not go back to its rule" >/dev/null
wait_new "DEBUG assign pid=$a .* tax=0.25" 3000 "pid $a not back at the rule's tax"
ok "untagged: back to the rule ($(tags_line db1))"

# 6. A delegated subtree: the cgroup `systemd-run --user -u pgx.service`
# gets, below user@1000.service (owned by uid 1000, as systemd delegates
# it), takes no rule by unit unless the rule says delegated = true. Before,
# the user's pgx.service matched the system's rule.
USER_SVC=user.slice/user-1000.slice/user@1000.service
make_cgroup system.slice/pgx.service
make_cgroup $USER_SVC/app.slice/pgx.service
chown 1000:1000 /sys/fs/cgroup/$USER_SVC /sys/fs/cgroup/$USER_SVC/app.slice /sys/fs/cgroup/$USER_SVC/app.slice/pgx.service ||
	fail "cannot delegate $USER_SVC"
spin -g /sys/fs/cgroup/$USER_SVC/app.slice/pgx.service $LONG >/dev/null &
c=$!
printf '[[rule]]\nname = "pg"\nmatch.unit = "pgx.service"\nlevel = 1\ntax = 0.5\n' >$RULES
mark
out=$(scx_chameleon reload-rules) || fail "reload-rules (pgx): $out"
wait_tags "^/sys/fs/cgroup/system.slice/pgx.service \(cgroup [0-9]*\): v1 level=1 tax=0.50 smt=any \(rule \"pg\"" 3000 \
	"the system's pgx.service did not take rule \"pg\"" >/dev/null
wait_new "rule \"pg\" ($RULES:1) does not apply to /sys/fs/cgroup/$USER_SVC/app.slice/pgx.service: it lies in delegated /sys/fs/cgroup/$USER_SVC (owned by uid 1000); add delegated = true" 3000 \
	"no word of the rule held back from the delegated pgx.service"
sleep 1.5	# matched again: still untagged
tags_line $USER_SVC/app.slice/pgx.service && fail "the delegated pgx.service took the system's rule: $(tags_line $USER_SVC/app.slice/pgx.service)"
grep -q "DEBUG assign pid=$c " "$AGENT_LOG" && fail "pid $c in the delegated pgx.service got an object"
ok "delegated $USER_SVC/app.slice/pgx.service untagged, pid $c no object; $(grep -m1 -o 'rule "pg" .* does not apply to [^:]*' "$AGENT_LOG")"
printf '[[rule]]\nname = "pg"\nmatch.unit = "pgx.service"\ndelegated = true\nlevel = 1\ntax = 0.5\n' >$RULES
mark
out=$(scx_chameleon reload-rules) || fail "reload-rules (pgx, delegated = true): $out"
wait_tags "^/sys/fs/cgroup/$USER_SVC/app.slice/pgx.service \(cgroup [0-9]*\): v1 level=1 tax=0.50 smt=any \(rule \"pg\"" 3000 \
	"delegated = true: the delegated pgx.service did not take the rule" >/dev/null
wait_new "DEBUG assign pid=$c .* tax=0.50" 4000 "delegated = true: pid $c got no object"
ok "delegated = true: $(tags_line $USER_SVC/app.slice/pgx.service), pid $c assigned"
end_tasks $c
rmdir /sys/fs/cgroup/$USER_SVC/app.slice/pgx.service /sys/fs/cgroup/$USER_SVC/app.slice /sys/fs/cgroup/$USER_SVC \
	/sys/fs/cgroup/user.slice/user-1000.slice /sys/fs/cgroup/user.slice /sys/fs/cgroup/system.slice/pgx.service /sys/fs/cgroup/system.slice

end_tasks $a $b
agent_alive || fail "agent died"
stop_agent
# With no agent: the stored tags only, and a note that it is not running.
out=$(scx_chameleon tags 2>&1 >/dev/null)
echo "$out" | grep -q "not running" || fail "tags without an agent: '$out'"
rmdir /sys/fs/cgroup/db1/sub /sys/fs/cgroup/db1 /sys/fs/cgroup/work1
pass
