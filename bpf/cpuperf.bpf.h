/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Performance targets (scx_bpf_cpuperf_set), included by main.bpf.c: the
 * modern form of Chameleon's Turbo Boost example. While a task is fused,
 * its representative asks for full performance; the CPUs lent to it, which
 * idle, ask for none; every other CPU asks for what its recent use needs,
 * with a quarter of headroom, as schedutil would give a CFS CPU. Without
 * this every CPU asks for full performance whatever it does (sched_ext's
 * default target), and a fused task cannot take the power budget its idle
 * neighbours leave.
 *
 * The kernel lets a scheduler set the target of the CPU whose runqueue it
 * holds only, so each CPU sets its own: from running() and tick() (the
 * representative, and a CPU's use) and from dispatch on a lent CPU as it
 * idles. A CPU asks again only when its target moves by 1/16 or more.
 * Off with --no-cpuperf.
 */

#include "cpuperf.h"

/* How far back a CPU's use is measured. */
#define CHAMELEON_PERF_WINDOW_NS	(32ULL * 1000 * 1000)

const volatile bool cpuperf_on = true;

u64 nr_cpuperf_sets;	/* targets handed to the kernel */

static void perf_set(s32 cpu, struct cpu_ctx *cc, u32 perf)
{
	u32 old = cc->perf_target;

	if (!cpuperf_on || !bpf_ksym_exists(scx_bpf_cpuperf_set))
		return;
	if (perf != SCX_CPUPERF_ONE && perf != 0 && old != SCX_CPUPERF_ONE && old != 0 &&
	    (perf > old ? perf - old : old - perf) < SCX_CPUPERF_ONE / 16)
		return;
	if (perf == old && cc->perf_set)
		return;
	scx_bpf_cpuperf_set(cpu, perf);
	cc->perf_target = perf;
	cc->perf_set = 1;
	__sync_fetch_and_add(&nr_cpuperf_sets, 1);
}

/* From @cpu itself (its runqueue held): the target its role and use ask for. */
static void perf_update(s32 cpu, struct cpu_ctx *cc, u64 now)
{
	u64 busy;

	if (!cpuperf_on)
		return;
	if (READ_ONCE(reps[CPU_IDX(cpu)].state) == REP_FUSED) {
		perf_set(cpu, cc, SCX_CPUPERF_ONE);
		return;
	}
	if (cc->borrowed_by) {
		perf_set(cpu, cc, 0);
		return;
	}
	/* Back from lending: full performance until its use is measured. */
	if (cc->perf_set && cc->perf_target == 0) {
		perf_set(cpu, cc, SCX_CPUPERF_ONE);
		cc->perf_at = 0;
	}
	/* What ran here, the running task's part so far included. */
	busy = cpu_stats[CPU_IDX(cpu)].busy_ns + (cc->running ? now - cc->curr_started : 0);
	if (cc->perf_at && now - cc->perf_at < CHAMELEON_PERF_WINDOW_NS)
		return;
	if (cc->perf_at)
		perf_set(cpu, cc, chameleon_perf_target(busy - cc->perf_busy, now - cc->perf_at));
	cc->perf_busy = busy;
	cc->perf_at = now;
}
