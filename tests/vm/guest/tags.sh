#!/bin/sh
# Tags stored on cgroups: `scx_chameleon tag/untag/tags`, validation with a
# message naming the field, inheritance by child cgroups and override, tags in
# force across agent restarts. Only root's tags count: they live in a
# trusted.* attribute; a delegated cgroup owner's user.* attribute is ignored;
# the root cgroup cannot be tagged; a damaged stored tag is reported and gives
# the cgroup no tag in force (never silently the parent's).
. /opt/chameleon/guest/lib.sh

make_cgroup seq
echo "+cpu" >/sys/fs/cgroup/seq/cgroup.subtree_control || fail "cannot enable cpu in seq"
make_cgroup seq/child

# stored CGROUP_DIR: the tag stored on a cgroup, as other tools see it.
stored() {
	xattr get "$1" trusted.chameleon.tag 2>/dev/null
}

# bad CMD... EXPECTED: must fail, print EXPECTED, and leave the tag alone.
bad() {
	want=$1; shift
	before=$(stored /sys/fs/cgroup/seq)
	out=$("$@" 2>&1) && fail "accepted: $* ($out)"
	echo "$out" | grep -qF "$want" || fail "$*: message '$out' lacks '$want'"
	after=$(stored /sys/fs/cgroup/seq)
	[ "$before" = "$after" ] || fail "$*: the tag changed ($before -> $after)"
	ok "refused: $* -> $(echo "$out" | tail -n 1)"
}

out=$(scx_chameleon tag seq --level 1 --tax 0.5) || fail "tag failed: $out"
echo "$out" | grep -q "not running: applies at its next start" || fail "no note about the agent: $out"
[ "$(stored /sys/fs/cgroup/seq)" = "v1 level=1 tax=0.50 smt=any" ] ||
	fail "stored tag is '$(stored /sys/fs/cgroup/seq)'"
ok "$out"
scx_chameleon tags | grep -q "^/sys/fs/cgroup/seq/child (cgroup [0-9]*): v1 level=1 .*(inherited from /sys/fs/cgroup/seq)$" ||
	fail "child does not inherit: $(scx_chameleon tags)"
ok "child inherits: $(scx_chameleon tags | grep child)"

bad 'level "9": expected an integer 1..=3' scx_chameleon tag seq --level 9
bad 'level 3: needs 8 CPUs in one node, the largest node here has 4 (level at most 2)' scx_chameleon tag seq --level 3
bad 'weight "0": expected an integer 1..=10000' scx_chameleon tag seq --weight 0
bad 'tax "NaN": expected a number from 0.01 to 100' scx_chameleon tag seq --tax NaN
bad 'tax "inf"' scx_chameleon tag seq --tax inf
bad 'tax "200"' scx_chameleon tag seq --tax 200
bad 'tax "abc"' scx_chameleon tag seq --tax abc
bad 'smt "half": expected uni, smt, kwork or any' scx_chameleon tag seq --smt half
bad 'cgroup /sys/fs/cgroup/nope: no such cgroup' scx_chameleon tag nope --level 1
bad 'cgroup /tmp: not under /sys/fs/cgroup' scx_chameleon tag /tmp --level 1
# Paths are resolved beneath /sys/fs/cgroup without following links: no
# link, no `..` leads out of it, and the root is the root however named.
ln -s /sys/fs/cgroup/seq /tmp/seqlink
bad 'cgroup /tmp/seqlink: not under /sys/fs/cgroup' scx_chameleon tag /tmp/seqlink --level 1
bad 'cgroup /sys/fs/cgroup/../../tmp: leaves /sys/fs/cgroup' scx_chameleon tag ../../tmp --level 1
bad 'leaves /sys/fs/cgroup' scx_chameleon untag seq/../..
bad 'the root cgroup cannot be tagged' scx_chameleon tag seq/.. --level 1
bad 'the root cgroup cannot be tagged' scx_chameleon --tag seq/..=level:1
rm /tmp/seqlink
bad 'needs root' runas 65534 scx_chameleon tag seq --level 2
bad 'level 3: needs 8 CPUs in one node, the largest node here has 4' scx_chameleon --tag seq=level:3
bad 'the root cgroup cannot be tagged' scx_chameleon tag /sys/fs/cgroup --level 1
bad 'the root cgroup cannot be tagged' scx_chameleon --tag /sys/fs/cgroup=level:1
bad 'listing tags needs root' runas 65534 scx_chameleon tags

# A delegated cgroup: its owner (uid 1000) may write user.* attributes on it,
# not trusted.* ones; what it writes grants nothing.
make_cgroup deleg
chown 1000:1000 /sys/fs/cgroup/deleg || fail "cannot delegate"
runas 1000 xattr set /sys/fs/cgroup/deleg user.chameleon.tag "v1 level=2 weight=10000 tax=0.01 smt=any" ||
	fail "the owner cannot write user.* on its cgroup (test premise)"
runas 1000 xattr set /sys/fs/cgroup/deleg trusted.chameleon.tag "v1 level=2 weight=10000 tax=0.01 smt=any" 2>/dev/null &&
	fail "a non-root owner wrote trusted.chameleon.tag"
scx_chameleon tags | grep -q "^/sys/fs/cgroup/deleg " && fail "the owner's own tag is listed: $(scx_chameleon tags)"
ok "a delegated owner's user.chameleon.tag is ignored and it cannot write trusted.*"

# damaged CGROUP VALUE WHY: a stored tag that does not decode, under the
# tagged seq, is listed DAMAGED with WHY (and is not inherited over).
damaged() {
	make_cgroup seq/$1
	xattr set /sys/fs/cgroup/seq/$1 trusted.chameleon.tag "$2" || fail "cannot write a damaged tag on seq/$1"
	line=$(scx_chameleon tags | grep "^/sys/fs/cgroup/seq/$1 ")
	echo "$line" | grep -q "DAMAGED, no tag in force: the tag stored on /sys/fs/cgroup/seq/$1$3" ||
		fail "damaged tag on seq/$1 not reported: '$line'"
	ok "damaged tag reported: $line"
}
damaged bad "v1 level=7 weight=x" ""
# One longer than any tag (300 bytes): refused as such, not decoded.
damaged long "v1 level=1 $(printf '%0290d' 0)" " is longer than any valid tag"

# The agent applies stored tags at start; the child inherits the tax; the
# damaged and the delegated cgroups get nothing.
start_agent --events
spin -g /sys/fs/cgroup/seq/child 3 >/dev/null
wait_log "fuse cpu=[0-9]* pid=[0-9]* cgroup=$(stat -c %i /sys/fs/cgroup/seq/child) " 1000 "a task of the child cgroup did not fuse"
ok "a task in seq/child fused under the inherited tag"
grep -q "the tag stored on /sys/fs/cgroup/seq/bad" "$AGENT_LOG" || fail "the agent did not report the damaged tag"
spin -g /sys/fs/cgroup/seq/bad 2 >/dev/null
spin -g /sys/fs/cgroup/deleg 2 >/dev/null
grep -qE "(demand|fuse) .*cgroup=$(stat -c %i /sys/fs/cgroup/seq/bad) " "$AGENT_LOG" && fail "the damaged cgroup inherited its parent's tag"
grep -qE "(demand|fuse) .*cgroup=$(stat -c %i /sys/fs/cgroup/deleg) " "$AGENT_LOG" && fail "the delegated owner's tag was honoured"
ok "no demand or fuse from seq/bad (damaged) or deleg (user.* only)"
rmdir /sys/fs/cgroup/seq/bad /sys/fs/cgroup/seq/long /sys/fs/cgroup/deleg
# A cgroup created while the agent runs inherits too (BPF cgroup_init).
make_cgroup seq/late
spin -g /sys/fs/cgroup/seq/late 2 >/dev/null
wait_log "fuse cpu=[0-9]* pid=[0-9]* cgroup=$(stat -c %i /sys/fs/cgroup/seq/late) " 1000 "a task of a new child cgroup did not fuse"
ok "a task in seq/late (created after start) fused under the inherited tag"
rmdir /sys/fs/cgroup/seq/late
stop_agent

# The child overrides: it shares its core (smt) and never fuses.
scx_chameleon tag seq/child --smt smt >/dev/null || fail "tag child failed"
start_agent --events
spin -g /sys/fs/cgroup/seq/child 2 >/dev/null
spin -g /sys/fs/cgroup/seq 2 >/dev/null
stop_agent
grep -q "fuse .*cgroup=$(stat -c %i /sys/fs/cgroup/seq/child) " "$AGENT_LOG" && fail "child fused despite smt=smt"
grep -q "fuse .*cgroup=$(stat -c %i /sys/fs/cgroup/seq) " "$AGENT_LOG" || fail "seq no longer fuses after a restart"
ok "after a restart: seq still fuses, seq/child (smt=smt) does not"

# Untagged: nothing fuses at the next start; removing a cgroup drops its tag.
scx_chameleon untag seq | grep -q "^untagged" || fail "untag failed"
scx_chameleon untag seq/child >/dev/null
start_agent --events
spin -g /sys/fs/cgroup/seq 2 >/dev/null
stop_agent
grep -q "^event  *fuse " "$AGENT_LOG" && fail "fused after untag"
ok "untagged: no fuse"
rmdir /sys/fs/cgroup/seq/child
scx_chameleon tags | grep -q child && fail "removed cgroup still listed"
pass
