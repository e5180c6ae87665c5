#!/bin/sh
# Tool (not a test): where the verifier's instructions go. Attaches the
# agent with --verifier-log (level 2: every instruction the verifier walks)
# and prints, per program, the instructions walked by source file (from the
# line info the log carries) and by global function (verified once per
# program that reaches it), then detaches. tools/verifier_cost boots it.
# Printed:
#   VCOST total PROG INSNS
#   VCOST func PROG FUNC INSNS      (a global function, its own walk)
#   VCOST file PROG FILE INSNS      (instructions whose line info is in FILE)
#   VCOST line PROG FILE:LINE INSNS
. /opt/chameleon/guest/lib.sh
AGENT_START_MS=${AGENT_START_MS:-600000}
start_agent --verifier-log
grep "^verifier: total_insns" "$AGENT_LOG"
stop_agent
awk '
/^libbpf: prog .*BEGIN PROG LOAD LOG/ {
	prog = $3; gsub(/[^a-z_0-9]/, "", prog); fn = "(main)"; inlog = 1; last = -2; cur = ""; next
}
/END PROG LOAD LOG/ { inlog = 0; next }
!inlog { next }
/^Validating / { fn = $2; sub(/\(\)$/, "", fn); next }
# Line info precedes the first instruction of a source line; the ones
# after it in order are of that line until the next.
/^; .* @ [a-z_]+\.(bpf\.)?[ch]:[0-9]+/ { n = split($0, a, " @ "); cur = a[n]; next }
/^[0-9]+: \(/ {
	idx = $1; sub(/:/, "", idx); idx += 0
	k = prog " " idx
	if (cur != "") { if (!(k in at)) at[k] = cur; cur = "" }
	else if (!(k in at) && idx == last + 1 && ((prog " " last) in at)) at[k] = at[prog " " last]
	last = idx
	t[prog]++; f[prog " " fn]++; cnt[k]++
}
END {
	for (k in cnt) {
		split(k, b, " "); line = (k in at) ? at[k] : "?"
		file = line; sub(/:.*/, "", file)
		fl[b[1] " " file] += cnt[k]; li[b[1] " " line] += cnt[k]
	}
	for (k in t) print "VCOST total", k, t[k]
	for (k in f) print "VCOST func", k, f[k]
	for (k in fl) print "VCOST file", k, fl[k]
	for (k in li) print "VCOST line", k, li[k]
}' "$AGENT_LOG" | sort -k2,2 -k4,4nr
pass
