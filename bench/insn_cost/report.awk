# SPDX-License-Identifier: GPL-2.0
# The arithmetic of bench/insn_cost/report for one boot (one vCPU count):
# joins the guest's log (INSN lines of bench_insn_cost.sh, kallsyms lines
# sorted by address) with the plugin's output and prints CSV records:
#   cb,CPUS,SCHED,LOAD,KIND,NAME,CALLS,INSNS,PAUSES,MAX,RUN_CNT
#       KIND callback: a struct_ops trampoline's call of its program (NAME
#       the op), the program with its kfuncs; trampoline: the trampoline
#       entered from the kernel (NAME the op), its own cost included; entry:
#       a BPF function the kernel called directly (NAME the program's or
#       subprogram's: a timer callback, a tracing program); nested: such
#       an entry inside another frame (a helper's callback, e.g. bpf_loop's:
#       already in that frame's count, so not in BPF_INSNS). INSNS and
#       PAUSES are sums over CALLS; RUN_CNT is bpf_stats' count over the
#       window of the program with the same tag ("-" when none has it).
#   site,CPUS,SCHED,LOAD,PROG,OFFSET,TARGET,CALLS,INSNS,PAUSES,MAX
#       a call instruction inside a BPF program (a kfunc, helper or
#       subprogram call): PROG+OFFSET calls TARGET.
#   unit,CPUS,SCHED,LOAD,UNITS,UNIT,SECONDS,BPF_INSNS,GUEST_INSNS,PAUSES
#       BPF_INSNS: the callbacks' and entries' instructions over the window
#       (each counted once: trampolines' own cost left out); GUEST_INSNS and
#       PAUSES: every vCPU's, over the window.
#   health,CPUS,LOST,MISMATCH,OVERFLOW,SITES,DROPPED,REG_FAIL
#   unmatched,CPUS,WINDOW,KIND,SITE  (a record whose site no symbol covers)
# Usage: awk -v cpus=N -f report.awk LOG PLUGIN_OUT  (mawk, gawk, busybox)
# Addresses stay strings (16 lowercase hex digits: awk's numbers are
# doubles); offsets are computed on their last 10 digits.

function hexlow(h,    i, v, c) {
	v = 0
	if (length(h) > 10)
		h = substr(h, length(h) - 9)
	for (i = 1; i <= length(h); i++) {
		c = index("0123456789abcdef", substr(h, i, 1)) - 1
		if (c < 0)
			return -1
		v = v * 16 + c
	}
	return v
}
function pad(h) {
	while (length(h) < 16)
		h = "0" h
	return h
}
# Index of the last symbol of scheduler s at or below address a, 0 if none.
function lookup(s, a,    lo, hi, mid) {
	lo = 1
	hi = nk[s]
	if (!hi || ka[s, 1] > a)
		return 0
	while (lo < hi) {
		mid = int((lo + hi + 1) / 2)
		if (ka[s, mid] <= a)
			lo = mid
		else
			hi = mid - 1
	}
	return lo
}
function offset(s, i, a,    d) {
	d = hexlow(a) - hexlow(ka[s, i])
	if (d < 0)
		d += 16 ^ 10
	return d
}
# bpf_prog_<16-hex tag>_<name>: the name (the tag when there is none).
function progname(n) {
	if (substr(n, 1, 9) != "bpf_prog_")
		return n
	if (length(n) > 26)
		return substr(n, 27)
	return substr(n, 10)
}
function progtag(n) {
	if (substr(n, 1, 9) != "bpf_prog_")
		return ""
	return substr(n, 10, 16)
}
function runcnt(w, tag) {
	return (w SUBSEP tag) in rc ? rc[w, tag] : "-"
}
function symname(s, a,    i, d) {
	i = lookup(s, a)
	if (!i)
		return a
	d = offset(s, i, a)
	return d ? sprintf("%s+0x%x", kn[s, i], d) : kn[s, i]
}
function add(key, c, n, p, m) {
	cnt[key] += c
	ins[key] += n
	pau[key] += p
	if (m > mx[key])
		mx[key] = m
	if (!(key in order)) {
		order[key] = ++nkeys
		keys[nkeys] = key
	}
}

BEGIN {
	FS = " "
	nkeys = 0
}

# The guest's log.
FNR == NR {
	if ($1 != "INSN")
		next
	if ($2 == "ksym") {
		a = pad($4)
		s = $3
		# Aliases at one address: the first one kept.
		if (nk[s] && ka[s, nk[s]] == a)
			next
		k = ++nk[s]
		ka[s, k] = a
		kn[s, k] = $5
	} else if ($2 == "window") {
		wsched[$3] = $4
		wload[$3] = $5
		wunits[$3] = $6
		wunit[$3] = $7
		wsec[$3] = $8
	} else if ($2 == "runcnt") {
		rc[$3, $4] += $6
	}
	next
}

# The plugin's output.
$1 == "window" {
	winsns[$2] = $4
	wpause[$2] = $6
	next
}
$1 == "health" {
	printf "health,%s,%s,%s,%s,%s,%s,%s\n", cpus, $3, $5, $7, $9, $11, ($12 == "reg_fail" ? $13 : 0)
	next
}
$1 == "site" {
	w = $2
	if (!(w in wsched))
		next
	s = wsched[w]
	kind = $3
	site = pad($4)
	target = $5 == "0" ? "" : pad($5)
	calls = $6
	insns = $7
	pauses = $8
	max = $9
	i = lookup(s, site)
	if (!i) {
		printf "unmatched,%s,%s,%s,%s\n", cpus, w, kind, site
		next
	}
	sym = kn[s, i]
	off = offset(s, i, site)
	if (kind == "call" && substr(sym, 1, 19) == "bpf__sched_ext_ops_") {
		tname = target == "" ? "" : symname(s, target)
		if (substr(tname, 1, 9) != "bpf_prog_")
			next # the trampoline's own enter/exit calls
		add(w SUBSEP "callback" SUBSEP substr(sym, 20) SUBSEP progtag(tname), calls, insns, pauses, max)
		bpf[w] += insns
	} else if (kind == "entry" && off == 0 && substr(sym, 1, 19) == "bpf__sched_ext_ops_") {
		add(w SUBSEP "trampoline" SUBSEP substr(sym, 20) SUBSEP "", calls, insns, pauses, max)
	} else if (kind == "entry" && off == 0 && substr(sym, 1, 9) == "bpf_prog_") {
		add(w SUBSEP "entry" SUBSEP progname(sym) SUBSEP progtag(sym), calls, insns, pauses, max)
		bpf[w] += insns
	} else if (kind == "nested" && off == 0 && substr(sym, 1, 9) == "bpf_prog_") {
		add(w SUBSEP "nested" SUBSEP progname(sym) SUBSEP progtag(sym), calls, insns, pauses, max)
	} else if (kind == "call" && substr(sym, 1, 9) == "bpf_prog_") {
		tname = target == "" ? "indirect" : symname(s, target)
		if (substr(tname, 1, 9) == "bpf_prog_")
			tname = progname(tname)
		printf "site,%s,%s,%s,%s,0x%x,%s,%s,%s,%s,%s\n", cpus, s, wload[w], progname(sym), off,
			tname, calls, insns, pauses, max
	}
	next
}

END {
	for (k = 1; k <= nkeys; k++) {
		split(keys[k], f, SUBSEP)
		w = f[1]
		printf "cb,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", cpus, wsched[w], wload[w], f[2], f[3],
			cnt[keys[k]], ins[keys[k]], pau[keys[k]], mx[keys[k]],
			f[4] == "" ? "-" : runcnt(w, f[4])
	}
	for (w in wsched)
		printf "unit,%s,%s,%s,%s,%s,%s,%.0f,%s,%s\n", cpus, wsched[w], wload[w], wunits[w], wunit[w],
			wsec[w], bpf[w], (w in winsns) ? winsns[w] : "-", (w in wpause) ? wpause[w] : "-"
}
