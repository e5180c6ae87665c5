/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Parking: the policy's half of `scx_chameleon park`, Bolt's critical part
 * (bolt-fast-reconfiguration §3-4). Taking a CPU offline costs tens of
 * milliseconds; what must hold at once is only that the scheduler stops
 * using it. The agent runs chameleon_park (a syscall program, BPF_PROG_RUN)
 * with a CPU mask, then tells the module, which moves the CPUs' IRQs and,
 * after a hold-off, takes them offline in bulk (the non-critical part). From
 * chameleon_park's return:
 * - nothing new lands on a parked CPU: select_cpu never picks one, enqueue
 *   sends a task that may run elsewhere to another CPU (withheld());
 * - what runs there is preempted and re-enqueued elsewhere (the kick);
 * - what waits in its queue is pulled by the other CPUs' dispatch;
 * - objects it belongs to are split, and it is never borrowed again;
 * - it still runs what can run nowhere else (per-CPU kthreads, tasks allowed
 *   on it alone), and the wait bound still holds for anything stuck there.
 * Unparking clears the mark and kicks the CPU: it serves again at once. The
 * agent's node manager treats a parked CPU as offline. Without the module
 * a parked CPU just idles; the kernel's own hotplug works alongside.
 * Costs one load on the dispatch path while nothing is parked.
 */

/* CPUs parked now. */
u32 nr_parked;

static bool cpu_parked(s32 cpu)
{
	return cpu_valid(cpu) && cpu_ctx(cpu)->parked;
}

/* Lent to an object or parked: not a CPU to place anyone new on. */
static bool withheld(s32 cpu)
{
	return cpu_borrowed(cpu) || cpu_parked(cpu);
}

/* Could @p run on some other CPU than the one it is on? */
static bool task_movable(struct task_struct *p)
{
	return p->nr_cpus_allowed > 1;
}

/*
 * A CPU other than withheld @cpu for @p: an idle one neither lent nor parked
 * nor another's representative, else the first allowed, online one that is
 * none of those in @cpu's steal order (nearest first, bounded). -1 if none:
 * @p stays, served by @cpu itself.
 */
static s32 pick_unwithheld(struct task_struct *p, s32 cpu)
{
	struct chameleon_steal_order *o;
	u32 key = cpu, i, nr;
	s32 c;

	c = pick_idle_unlent(p);
	if (c >= 0)
		return c;
	o = bpf_map_lookup_elem(&steal_orders, &key);
	if (!o)
		return -1;
	nr = o->nr < CHAMELEON_MAX_CPUS ? o->nr : CHAMELEON_MAX_CPUS;
	bpf_for(i, 0, CHAMELEON_MAX_CPUS) {
		if (i >= nr)
			break;
		c = o->cpus[i];
		if (cpu_valid(c) && c != cpu && cpu_ctx(c)->online && !withheld(c) &&
		    !held_from(c, p) && bpf_cpumask_test_cpu(c, p->cpus_ptr))
			return c;
	}
	return -1;
}

/*
 * ops.dispatch on a parked CPU: the task the wait bound named, else the
 * first queued task that cannot run elsewhere. The others wait for another
 * CPU's pull_parked().
 */
static bool dispatch_parked(s32 cpu)
{
	struct task_struct *p;

	if (dispatch_starved(cpu))
		return true;
	bpf_for_each(scx_dsq, p, cpu, 0) {
		if (task_movable(p))
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0))
			return true;
	}
	return false;
}

/* ops.dispatch on a CPU not parked: take one movable task from a parked CPU's queue. */
static bool pull_parked(s32 cpu)
{
	struct task_struct *p;
	u32 c;

	if (!READ_ONCE(nr_parked))
		return false;
	bpf_for(c, 0, nr_cpus) {
		if (!cpu_ctx(c)->parked || !scx_bpf_dsq_nr_queued(c))
			continue;
		bpf_for_each(scx_dsq, p, c, 0) {
			if (!task_movable(p) || !bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
				continue;
			if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0)) {
				cpu_stats[CPU_IDX(cpu)].nr_stolen++;
				return true;
			}
		}
	}
	return false;
}

/*
 * BPF_PROG_RUN by the agent: park (args->park) or unpark every CPU of
 * args->mask. Splits the objects a parked CPU belongs to and kicks it, so
 * that what runs there goes elsewhere now. Returns how many CPUs changed.
 */
SEC("syscall")
int chameleon_park(struct chameleon_park_args *args)
{
	bool park = args->park;
	int changed = 0;
	u32 cpu;

	bpf_for(cpu, 0, nr_cpus) {
		struct cpu_ctx *cc;
		struct rep_ctx *rc;
		u64 word;

		if (cpu >= CHAMELEON_MAX_CPUS)
			break;
		word = args->mask[(cpu / 64) & (CHAMELEON_MAX_CPUS / 64 - 1)];
		if (!((word >> (cpu % 64)) & 1))
			continue;
		cc = cpu_ctx(cpu);
		if (!park) {
			if (cc->parked) {
				WRITE_ONCE(cc->parked, 0);
				__sync_fetch_and_sub(&nr_parked, 1);
				changed++;
			}
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
			continue;
		}
		if (!cc->parked) {
			WRITE_ONCE(cc->parked, 1);
			__sync_fetch_and_add(&nr_parked, 1);
			changed++;
		}
		rc = rep_ctx(cpu);
		if (rc && rc->state == REP_FUSED)
			split(cpu, CHAMELEON_SPLIT_OFFLINE);
		if (cc->borrowed_by)
			split(cc->borrowed_by - 1, CHAMELEON_SPLIT_OFFLINE);
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	}
	return changed;
}
