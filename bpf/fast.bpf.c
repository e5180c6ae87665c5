/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fast CPUs: hybrid machines' fast cores first for tasks without an object,
 * and each CPU's performance target (below).
 *
 * Hybrid CPUs: the fast cores first, for everyone without an object.
 *
 * On a machine whose CPUs differ in capacity (P and E cores, or the agent's
 * --cpu-capacity), the agent names the CPUs of the top capacity before the
 * load (fast_cpu_bits). A tagged task's object is placed on them by the node
 * manager; this file is for the rest: a single-threaded task left on an
 * E-core while a P-core idles runs at the E-core's speed for as long as it
 * runs (sched-ext/scx#3259), and neither the kernel's default idle pick nor
 * "stay on the previous CPU" knows one core from the other.
 *
 *   - wakeup (select_cpu): a task whose last CPU is slow takes an idle fast
 *     CPU first; one whose last CPU is fast and idle keeps it;
 *   - a task that never sleeps (a spinner started while the P-cores were
 *     busy) gets no wakeup to move at: the tick on a slow CPU ends its slice
 *     when a fast CPU idles, and enqueue sends it there.
 *
 * Fast CPUs that are lent to an object, parked or another's representative
 * idle on purpose and are skipped, as everywhere. Only tasks allowed on
 * every CPU and not kthreads: an affinity is the user's choice, and kernel
 * work has its own rules (kwork). Not hybrid (all capacities equal): none of
 * this runs.
 */

#include "role.bpf.h"

/* Bit N: CPU N has the top capacity. All zero: not a hybrid machine. */
const volatile u64 fast_cpu_bits[CHAMELEON_MAX_CPUS / 64];

/* The same set as a cpumask, for the kernel's idle picker (chameleon_init). */
private(FAST) struct bpf_cpumask __kptr *fast_mask;

static bool cpu_is_fast(s32 cpu)
{
	return cpu_valid(cpu) && (fast_cpu_bits[CPU_IDX(cpu) / 64] & (1ULL << (cpu & 63)));
}

/* Does @p, last on @cpu, belong on a fast CPU if one idles? */
bool wants_fast(struct task_struct *p, s32 cpu)
{
	return hybrid && !cpu_is_fast(cpu) && !(p->flags & PF_KTHREAD) &&
	       p->nr_cpus_allowed >= nr_cpus;
}

/*
 * An idle fast CPU that @p may use (not withheld, nor another's
 * representative), its idle bit taken; -1 if none. Bounded like
 * pick_idle(): a fast CPU @p may not run on is passed over, its bit given
 * back.
 */
s32 pick_idle_fast(struct task_struct *p __arg_trusted)
{
	struct bpf_cpumask *fast = fast_mask;
	s32 cpu;
	u32 i;

	if (!fast)
		return -1;
	bpf_for(i, 0, CHAMELEON_OBJ_MAX_CPUS) {
		cpu = idle_pick_in(cast_mask(fast), scx_bpf_task_cpu(p));
		if (cpu < 0)
			return -1;
		if (may_run_on(p, cpu, PLACE_NEW))
			return cpu;
		idle_refused(cpu);
	}
	return -1;
}

/*
 * From the tick on slow @cpu: is a fast CPU idle and free for @p? Looked up
 * without taking its idle bit (enqueue takes it): one candidate, rotating,
 * so that a lent fast CPU does not hide the others for good. With per-node
 * idle masks it looks in @p's node only: enqueue's pick_idle_fast() widens
 * to the other nodes.
 */
bool fast_cpu_idles(struct task_struct *p)
{
	struct bpf_cpumask *fast = fast_mask;
	const struct cpumask *idle;
	s32 cpu;

	if (!fast)
		return false;
	idle = idle_mask_near(scx_bpf_task_cpu(p));
	cpu = bpf_cpumask_any_and_distribute(idle, cast_mask(fast));
	scx_bpf_put_idle_cpumask(idle);
	return may_run_on(p, cpu, PLACE_NEW);
}

/* chameleon_init: the fast set as a cpumask. */
s32 fast_init(void)
{
	struct bpf_cpumask *m;
	u32 cpu;

	if (!hybrid)
		return 0;
	m = bpf_cpumask_create();
	if (!m)
		return -ENOMEM;
	bpf_for(cpu, 0, nr_cpus) {
		if (cpu_is_fast(cpu))
			bpf_cpumask_set_cpu(cpu, m);
	}
	m = bpf_kptr_xchg(&fast_mask, m);
	if (m)
		bpf_cpumask_release(m);
	return 0;
}

/*
 * Performance targets (scx_bpf_cpuperf_set): the
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

/*
 * A CPU's use is measured over a window of its own ticks (32 ms at HZ=250)
 * rather than of clock time, so that the share of ticks that end a window,
 * and with it what a tick costs, does not depend on how far apart its ticks
 * are: a vCPU that waits for its host core gets its ticks late, and counted
 * in clock time nearly every tick would end a window. The use is the busy
 * time over the window's clock time.
 */
#define CHAMELEON_PERF_WINDOW_TICKS	8

void perf_set(s32 cpu, u32 perf)
{
	struct cpu_perf *cc = &cpu_perfs[CPU_IDX(cpu)];
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
	cc->nr_sets++;
}

/*
 * From @cpu's tick (its runqueue held): the target its role asks for at
 * once, the one its use asks for at the end of each window.
 */
void perf_update(s32 cpu, u64 now)
{
	struct cpu_perf *cc = &cpu_perfs[CPU_IDX(cpu)];
	struct cpu_run *cr = cpu_run(cpu);
	u64 busy;

	if (!cpuperf_on)
		return;
	if (cpu_fused(cpu)) {
		perf_set(cpu, SCX_CPUPERF_ONE);
		return;
	}
	if (cpu_lent(cpu)) {
		perf_set(cpu, 0);
		return;
	}
	/* Back from lending: full performance until its use is measured. */
	if (cc->perf_set && cc->perf_target == 0) {
		perf_set(cpu, SCX_CPUPERF_ONE);
		cc->perf_at = 0;
	}
	if (cc->perf_at && ++cc->perf_ticks < CHAMELEON_PERF_WINDOW_TICKS)
		return;
	cc->perf_ticks = 0;
	/* What ran here, the running task's part so far included. */
	busy = cpu_stats[CPU_IDX(cpu)].busy_ns + (cr->running ? now - cr->curr_started : 0);
	if (cc->perf_at)
		perf_set(cpu, chameleon_perf_target(busy - cc->perf_busy, now - cc->perf_at));
	cc->perf_busy = busy;
	cc->perf_at = now;
}
