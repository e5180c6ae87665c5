/* SPDX-License-Identifier: GPL-2.0 */
/*
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

/* Bit N: CPU N has the top capacity. All zero: not a hybrid machine. */
const volatile u64 fast_cpu_bits[CHAMELEON_MAX_CPUS / 64];
const volatile bool hybrid;

/* The same set as a cpumask, for the kernel's idle picker (chameleon_init). */
private(FAST) struct bpf_cpumask __kptr *fast_mask;

u64 nr_fast_moves;	/* tasks sent from a slow CPU to an idle fast one */

static bool cpu_is_fast(s32 cpu)
{
	return cpu_valid(cpu) && (fast_cpu_bits[CPU_IDX(cpu) / 64] & (1ULL << (cpu & 63)));
}

/* Does @p, last on @cpu, belong on a fast CPU if one idles? */
static bool wants_fast(struct task_struct *p, s32 cpu)
{
	return hybrid && !cpu_is_fast(cpu) && !(p->flags & PF_KTHREAD) &&
	       p->nr_cpus_allowed >= nr_cpus;
}

/*
 * An idle fast CPU that @p may use (not withheld, nor another's
 * representative), its idle bit taken; -1 if none. Bounded like
 * pick_idle_unlent(): a lent fast CPU returned by the picker is passed over.
 */
static s32 pick_idle_fast(struct task_struct *p)
{
	struct bpf_cpumask *fast = fast_mask;
	s32 cpu;
	u32 i;

	if (!fast)
		return -1;
	bpf_for(i, 0, CHAMELEON_OBJ_MAX_CPUS) {
		cpu = scx_bpf_pick_idle_cpu(cast_mask(fast), 0);
		if (cpu < 0)
			return -1;
		if (!withheld(cpu) && !held_from(cpu, p))
			return cpu;
	}
	return -1;
}

/*
 * From the tick on slow @cpu: is a fast CPU idle and free for @p? Looked up
 * without taking its idle bit (enqueue takes it): one candidate, rotating,
 * so that a lent fast CPU does not hide the others for good.
 */
static bool fast_cpu_idles(struct task_struct *p)
{
	struct bpf_cpumask *fast = fast_mask;
	const struct cpumask *idle;
	s32 cpu;

	if (!fast)
		return false;
	idle = scx_bpf_get_idle_cpumask();
	cpu = bpf_cpumask_any_and_distribute(idle, cast_mask(fast));
	scx_bpf_put_idle_cpumask(idle);
	return cpu_valid(cpu) && !withheld(cpu) && !held_from(cpu, p);
}

/* chameleon_init: the fast set as a cpumask. */
static s32 fast_init(void)
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
