/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPU hotplug: what a CPU going down needs from us, on every kernel.
 *
 * Going down, a CPU stops being active, the kernel stops calling
 * ops.dispatch there and, after ops.cpu_offline, its hotplug thread
 * (cpuhp/N, in sched_cpu_wait_empty) sleeps until the CPU's runqueue holds
 * nothing but itself. Under sched_ext a runqueue counts every task whose CPU
 * it is, wherever it is queued: tasks left in our queue of that CPU, or moved
 * off it by another CPU, keep it non-empty. The waiter is woken only when the
 * dying CPU itself schedules and finds its runqueue empty (balance_push);
 * a CPU that went idle while tasks still counted there never looks again.
 * Kernels from 7.1 on re-enqueue those tasks to the CPU's local queue in
 * rq_offline; 6.16 to 7.0 do not, and the hotplug hung for good (seen on
 * 7.0.13 by hotplug_storm: cpuhp/3 blocked in sched_cpu_wait_empty with CPU 3
 * idle and its runqueue empty).
 *
 * So, for every CPU that went offline:
 * - drain: the next CPU that dispatches moves its queue to the kernel's global
 *   queue, which every CPU consumes first, the dying one included (its own
 *   per-CPU kthreads must run there: ksoftirqd/N, kworkers);
 * - dying: until the CPU leaves the kernel's online mask (its hotplug thread
 *   is done waiting), it is kicked when idle so that it schedules again and
 *   sees its runqueue empty; the guard timer keeps a dispatcher and those
 *   kicks coming even when every other CPU is idle.
 * Costs one load on the dispatch path while no CPU is going down.
 */

/* CPUs with drain or dying set. */
u32 nr_to_drain;
/* Queues drained because their CPU had stopped dispatching (hotplug_guard). */
u64 nr_rescued;

/* Make an online CPU other than @gone dispatch soon, so that it drains @gone. */
static void kick_drainer(s32 gone)
{
	u32 c;

	bpf_for(c, 0, nr_cpus) {
		if (c != gone && cpu_ctx(c)->online) {
			scx_bpf_kick_cpu(c, SCX_KICK_IDLE);
			return;
		}
	}
}

static void drain_done(struct cpu_ctx *cc)
{
	if (__sync_bool_compare_and_swap(&cc->drain, 1, 0))
		__sync_fetch_and_sub(&nr_to_drain, 1);
}

/* @cpu went offline (ops.cpu_offline, on @cpu itself). */
static void hotplug_cpu_gone(s32 cpu)
{
	struct cpu_ctx *cc = cpu_ctx(cpu);

	WRITE_ONCE(cc->dying, 1);
	if (__sync_bool_compare_and_swap(&cc->drain, 0, 1))
		__sync_fetch_and_add(&nr_to_drain, 1);
	kick_drainer(cpu);
}

/*
 * @cpu is back (ops.cpu_online): nothing left to do for its way down. What
 * its queue still holds is its own to run: make it look.
 */
static void hotplug_cpu_back(s32 cpu)
{
	struct cpu_ctx *cc = cpu_ctx(cpu);

	WRITE_ONCE(cc->dying, 0);
	drain_done(cc);
	if (scx_bpf_dsq_nr_queued(cpu))
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
}

/*
 * Kick every CPU still on its way down, and stop once the kernel took it out
 * of the online mask: from then on no hotplug thread waits for it.
 */
static void kick_dying(void)
{
	const struct cpumask *online;
	u32 c;

	online = scx_bpf_get_online_cpumask();
	bpf_for(c, 0, nr_cpus) {
		struct cpu_ctx *cc = cpu_ctx(c);

		if (!cc->dying)
			continue;
		if (bpf_cpumask_test_cpu(c, online))
			scx_bpf_kick_cpu(c, SCX_KICK_IDLE);
		else
			WRITE_ONCE(cc->dying, 0);
	}
	scx_bpf_put_cpumask(online);
}

/* From ops.dispatch on any CPU. */
static void drain_offline(void)
{
	struct task_struct *p;
	u32 c;

	if (!READ_ONCE(nr_to_drain))
		return;
	bpf_for(c, 0, nr_cpus) {
		struct cpu_ctx *cc = cpu_ctx(c);

		if (!cc->drain)
			continue;
		bpf_for_each(scx_dsq, p, c, 0)
			scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_GLOBAL, 0);
		if (!cc->dying && !scx_bpf_dsq_nr_queued(c))
			drain_done(cc);
	}
	/* After the moves: a kicked CPU sees what they left. */
	kick_dying();
}

/*
 * A queue whose CPU has not dispatched for this long while tasks wait in it is
 * served by the others. Longer than a slice (5 ms by default) by far, and far
 * below the kernel's watchdog. Lent CPUs are left to the lending bound.
 */
#define CHAMELEON_RESCUE_NS	(200ULL * 1000 * 1000)

/*
 * From the guard timer, every CHAMELEON_GUARD_NS:
 * - an online CPU that idles while its own queue holds tasks is kicked: its
 *   enqueue-time kick can be lost around hotplug (a kick to a CPU that is not
 *   online yet is dropped);
 * - a queue whose CPU has not dispatched for CHAMELEON_RESCUE_NS, or that a
 *   higher class has held for CHAMELEON_RELEASE_NS (preempt.h: it told us,
 *   no need to wait that long), is drained like an offline CPU's. A CPU stops dispatching when a higher class (RT,
 *   deadline) holds it, and on 6.16-7.0 as soon as it stops being active on
 *   its way down, long before ops.cpu_offline: the RCU grace period the
 *   hotplug then waits for can need a task in that queue (seen on 7.0.13:
 *   rcu_preempt, the agent and a stress-ng worker waited 10.6 s in CPU 1's
 *   queue with CPU 1 idle, then the watchdog);
 * - while a CPU is on its way down, the drain and the kicks go on even if
 *   nothing dispatches;
 * - a local queue no scx task has served for CHAMELEON_RELEASE_NS goes back
 *   to enqueue (7.1+).
 */
static void hotplug_guard(u64 now)
{
	u32 c;

	bpf_for(c, 0, nr_cpus) {
		struct cpu_ctx *cc = cpu_ctx(c);
		bool away = chameleon_released_long(READ_ONCE(cc->released_at), now,
						    CHAMELEON_RELEASE_NS);

		/*
		 * A local queue no scx task serves for CHAMELEON_RELEASE_NS: a
		 * higher class holds the CPU, and the kernel did not tell us
		 * (preempt.h: chameleon_local_linger). 7.1+ can re-enqueue a
		 * remote local queue; enqueue() never puts a re-enqueued task
		 * back into one, so each task comes back once.
		 */
		if (__COMPAT_has_generic_reenq()) {
			int reenq;

			cc->local_seen_at = chameleon_local_linger(
				scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | c) && !READ_ONCE(cc->running),
				cc->local_seen_at, now, CHAMELEON_RELEASE_NS, &reenq);
			if (reenq)
				scx_bpf_dsq_reenq___compat(SCX_DSQ_LOCAL_ON | c, 0);
		}
		if (!scx_bpf_dsq_nr_queued(c)) {
			WRITE_ONCE(cc->dispatched_at, now);
			continue;
		}
		/* A lent CPU idles on purpose: the lending bound serves its queue. */
		if (cc->online && !cc->running && !cc->borrowed_by)
			scx_bpf_kick_cpu(c, SCX_KICK_IDLE);
		/*
		 * Not a lent CPU's: its waiters are the lending bound's (up to
		 * 1 s), and the global queue would hand them to the lent CPU.
		 */
		if (!cc->borrowed_by &&
		    (now - READ_ONCE(cc->dispatched_at) > CHAMELEON_RESCUE_NS || away) &&
		    __sync_bool_compare_and_swap(&cc->drain, 0, 1)) {
			__sync_fetch_and_add(&nr_to_drain, 1);
			__sync_fetch_and_add(&nr_rescued, 1);
		}
	}
	bpf_for(c, 0, nr_cpus) {
		if (cpu_ctx(c)->drain) {
			kick_drainer(c);
			break;
		}
	}
	if (READ_ONCE(nr_to_drain))
		kick_dying();
}
