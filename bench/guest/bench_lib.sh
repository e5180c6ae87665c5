#!/bin/sh
# What the benchmarks share (sourced after lib.sh): the peer schedulers
# (scx_cosmos, scx_bpfland... put in the guest by tests/vm/run --with) and
# the kernel's bpf_stats of the struct_ops programs loaded.

# start_peer NAME: run the peer scheduler NAME until sched_ext is enabled
# (60 s at most); PEER_PID is its pid.
start_peer() {
	"$1" >/tmp/$1.log 2>&1 &
	PEER_PID=$!
	_t0=$(now_ms)
	until [ "$(state)" = enabled ]; do
		kill -0 $PEER_PID 2>/dev/null || fail "$1 exited: $(tail -n 3 /tmp/$1.log | tr '\n' '|')"
		[ $(( $(now_ms) - _t0 )) -lt 60000 ] || fail "$1 not enabled in 60 s"
		usleep 20000
	done
	ok "$1 attached (ops $(ops))"
}

# stop_peer NAME: SIGINT, as a user would, and wait for sched_ext to detach.
stop_peer() {
	kill -INT $PEER_PID
	wait $PEER_PID
	wait_state disabled 30000 >/dev/null || fail "$1 did not detach"
}

# The BPF programs loaded now, of every type (a scheduler's tracing hooks,
# e.g. our sched_switch one on 6.19+, are part of its cost): "name
# run_time_ns run_cnt" per line (bpftool gives the full function name from
# BTF where the kernel's is cut at 15 characters). bpftool prints a
# run_time_ns line only for a program that ran: each program's header resets
# the name, so that a count is never put under the name of one before it.
bpf_progs() {
	bpftool prog show 2>/dev/null | awk '
		/^[0-9]+: / { name = ""; for (i = 1; i <= NF; i++) if ($i == "name") name = $(i + 1) }
		/run_time_ns/ && name != "" { for (i = 1; i <= NF; i++) {
			if ($i == "run_time_ns") t = $(i + 1); if ($i == "run_cnt") c = $(i + 1) }
			print name, t, c; name = "" }'
}

# start_sched NAME / stop_sched NAME: every bench's schedulers by one name.
# eevdf (nothing loaded), chameleon, chameleon-tags (a level-1 tag on an
# empty cgroup: tags present but idle), agent variants for an A/B in one
# boot: chameleon@OPTION=VALUE (chameleon@wake-gran-us=0), chameleon+FLAG
# (chameleon+llc-queues), any number of both (chameleon+llc-queues@slice-us=20000),
# and chameleon-base[...] (the same on another build of the agent, the host's
# CHAMELEON_BASE, for an A/B of two commits), and the peers scx_*
# (tests/vm/run --with). stop_sched prints the agent's own counters over the attach as
# "BENCH agent ..." lines.
start_sched() {
	case $1 in
	eevdf) ;;
	chameleon-tags) make_cgroup idle; AGENT_BIN=scx_chameleon start_agent --tag idle=level:1,tax:1 ;;
	chameleon | chameleon[@+-]*)
		# chameleon[-base][+FLAG][@OPTION=VALUE]...: that build of the
		# agent with those set.
		_r=${1#chameleon}
		_bin=scx_chameleon
		case $_r in -base*) _bin=scx_chameleon_base _r=${_r#-base} ;; esac
		set --
		while [ -n "$_r" ]; do
			_c=${_r%"${_r#?}"}
			_r=${_r#?}
			_t=${_r%%[@+]*}
			_r=${_r#"$_t"}
			case $_c in
			+) set -- "$@" "--$_t" ;;
			@) set -- "$@" "--${_t%%=*}" "${_t#*=}" ;;
			*) fail "start_sched: cannot read the agent variant '$_c$_t'" ;;
			esac
		done
		AGENT_BIN=$_bin start_agent "$@" ;;
	scx_*) start_peer "$1" ;;
	*) fail "unknown scheduler $1" ;;
	esac
}
stop_sched() {
	case $1 in
	eevdf) ;;
	chameleon*)
		stop_agent
		sed -n 's/^summary /BENCH agent /p' "$AGENT_LOG" ;;
	scx_*) stop_peer "$1" ;;
	esac
}

# The schedulers "$2"... in round $1's turn order (1-based): rotated by the
# round, so that no scheduler always runs first (cold) or last.
sched_order() {
	_r=$1
	shift
	_k=$(( (_r - 1) % $# ))
	while [ "$_k" -gt 0 ]; do
		_f=$1
		shift
		set -- "$@" "$_f"
		_k=$((_k - 1))
	done
	echo "$@"
}
