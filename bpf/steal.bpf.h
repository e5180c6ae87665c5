/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Taking work from other CPUs' queues in ops.dispatch: stealing when this
 * CPU's own queue is empty, and a balance pull between busy CPUs.
 * Included by main.bpf.c.
 */

/*
 * Is the head of @victim's queue the owner of the object fused there? Taken
 * elsewhere it would end its object (split `migrate`: a spinner with its
 * core, stolen by an idle CPU after a kthread's turn, every few seconds).
 */
static bool owner_heads(s32 victim)
{
	struct rep_ctx *rc = &reps[CPU_IDX(victim)];
	struct task_struct *head;

	if (READ_ONCE(rc->state) != REP_FUSED)
		return false;
	head = __COMPAT_scx_bpf_dsq_peek(victim);
	return head && head->pid == READ_ONCE(rc->owner);
}

/*
 * Steal the head of another CPU's queue: the SMT siblings first, then a
 * window of CHAMELEON_STEAL_SCAN - siblings other CPUs in topology order from
 * a rotating start (steal_orders). Bounded per dispatch, and every queue,
 * including an offline CPU's, is visited within a few dispatches.
 */
static bool steal(s32 cpu, struct cpu_ctx *cc)
{
	struct chameleon_steal_order *o;
	u32 key = cpu, i, nr, near;
	int k;
	s32 victim;

	o = bpf_map_lookup_elem(&steal_orders, &key);
	if (!o)
		return false;
	nr = o->nr < CHAMELEON_MAX_CPUS ? o->nr : CHAMELEON_MAX_CPUS;
	near = o->nr_near;
	bpf_for(i, 0, CHAMELEON_STEAL_SCAN) {
		k = chameleon_steal_pick(i, nr, near, cc->steal_start);
		if (k < 0)
			break;
		victim = o->cpus[k & (CHAMELEON_MAX_CPUS - 1)];
		/* Not from a CPU a kthread holds for a moment (preempt.h). */
		if (!cpu_valid(victim) || victim == cpu ||
		    !scx_bpf_dsq_nr_queued(victim) || kthread_holds(victim) || owner_heads(victim))
			continue;
		if (scx_bpf_dsq_move_to_local(victim, 0)) {
			cpu_stats[CPU_IDX(cpu)].nr_stolen++;
			return true;
		}
	}
	/* Next time, the window after this one. */
	if (near < CHAMELEON_STEAL_SCAN)
		cc->steal_start += CHAMELEON_STEAL_SCAN - near;
	return false;
}

/*
 * Balance between busy CPUs: stealing happens only when a CPU's own queue is
 * empty, and a CPU-bound task never wakes to be placed again, so queues made
 * uneven by hotplug or affinity changes stayed uneven for good (the soak saw
 * 32 tasks queued on CPU 3 and 6 on CPU 0). Each dispatch compares its queue
 * with one other CPU's, in steal order, rotating; a queue longer by more than
 * two gives this CPU its head. O(1) per dispatch.
 */
static bool balance_pull(s32 cpu, struct cpu_ctx *cc, u64 mine)
{
	struct chameleon_steal_order *o;
	u32 key = cpu, nr, k;
	s32 victim;

	o = bpf_map_lookup_elem(&steal_orders, &key);
	if (!o)
		return false;
	nr = o->nr < CHAMELEON_MAX_CPUS ? o->nr : CHAMELEON_MAX_CPUS;
	if (!nr)
		return false;
	k = cc->balance_idx;
	if (k >= nr)
		k = 0;
	cc->balance_idx = k + 1;
	victim = o->cpus[cpu_idx(k)];
	if (!cpu_valid(victim) || victim == cpu || cpu_borrowed(victim))
		return false;
	if (scx_bpf_dsq_nr_queued(victim) <= mine + 2 || kthread_holds(victim) ||
	    owner_heads(victim))
		return false;
	if (!scx_bpf_dsq_move_to_local(victim, 0))
		return false;
	cpu_stats[CPU_IDX(cpu)].nr_stolen++;
	return true;
}
