/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CPU hotplug, and queues their CPU stopped serving, on every kernel.
 *
 * Going down, a CPU stops being active, the kernel stops calling
 * ops.dispatch there and, after ops.cpu_offline, its hotplug thread
 * (cpuhp/N, in sched_cpu_wait_empty) sleeps until the CPU's runqueue holds
 * nothing but itself. Under sched_ext a runqueue counts every task whose CPU
 * it is, wherever it is queued: tasks left in our queue of that CPU keep it
 * non-empty. The waiter is woken only when the dying CPU itself schedules
 * and finds its runqueue empty; a CPU that went idle while tasks still
 * counted there never looks again. Kernels from 7.1 on re-enqueue those
 * tasks to the CPU's local queue in rq_offline; 6.16 to 7.0 do not.
 *
 * So, for every CPU that went offline, from the guard timer (never on the
 * scheduling path):
 * - drain: its queue is moved out (move_queue(MOVE_ALL): the movable tasks
 *   to CPUs they may run on, the rest to the kernel's global queue, which
 *   the dying CPU consumes itself: its per-CPU kthreads must run there; an
 *   online CPU's unserved queue keeps what can run only there);
 * - dying: until the CPU leaves the kernel's online mask (its hotplug thread
 *   is done waiting), it is kicked so that it schedules again and sees its
 *   runqueue empty.
 * A queue whose CPU has not dispatched for CHAMELEON_RESCUE_NS, or that a
 * higher class holds for CHAMELEON_RELEASE_NS, is drained the same way.
 */
#include "chameleon.bpf.h"

static void drain_done(struct cpu_hotplug *h)
{
	if (__sync_bool_compare_and_swap(&h->drain, 1, 0))
		__sync_fetch_and_sub(&nr_to_drain, 1);
}

static void drain_start(s32 cpu)
{
	struct cpu_hotplug *h = &cpu_hps[CPU_IDX(cpu)];

	if (__sync_bool_compare_and_swap(&h->drain, 0, 1))
		__sync_fetch_and_add(&nr_to_drain, 1);
	guard_need_set(cpu);
}

/*
 * @cpu's own dispatch found tasks in its queue and could move none of them
 * to its local queue: none may run there now (a CPU on its way offline is
 * no longer active, and the kernel runs only per-CPU kthreads on it). Its
 * queue is drained as an unserved one, which the guard would otherwise
 * start only after CHAMELEON_RESCUE_NS without a dispatch, never while the
 * CPU keeps dispatching in vain.
 */
void hotplug_unrunnable(s32 cpu)
{
	if (cpu_valid(cpu))
		drain_start(cpu);
}

/* @cpu went offline (ops.cpu_offline). */
void hotplug_cpu_gone(s32 cpu)
{
	struct cpu_hotplug *h = &cpu_hps[CPU_IDX(cpu)];

	if (READ_ONCE(h->online))
		llc_unfit_add(cpu, 1);
	WRITE_ONCE(h->online, 0);
	WRITE_ONCE(h->dying, 1);
	drain_start(cpu);
}

/* @cpu is back (ops.cpu_online): what its queue still holds is its own to run. */
void hotplug_cpu_back(s32 cpu)
{
	struct cpu_hotplug *h = &cpu_hps[CPU_IDX(cpu)];

	if (!READ_ONCE(h->online))
		llc_unfit_add(cpu, -1);
	WRITE_ONCE(h->online, 1);
	WRITE_ONCE(h->dying, 0);
	drain_done(h);
	if (scx_bpf_dsq_nr_queued(cpu))
		kick_cpu(cpu, SCX_KICK_IDLE);
}

/*
 * From the guard timer: a dying CPU @c is kicked until the kernel took it
 * out of the online mask; then it is no longer dying, and done draining
 * once its queue is empty. Global: verified once.
 */
int hotplug_dying(u32 c)
{
	const struct cpumask *online;
	struct cpu_hotplug *h;

	if (!cpu_valid(c))
		return 0;
	h = &cpu_hps[CPU_IDX(c)];
	if (!READ_ONCE(h->dying))
		return 0;
	online = scx_bpf_get_online_cpumask();

	if (bpf_cpumask_test_cpu(c, online)) {
		kick_cpu(c, SCX_KICK_IDLE);
	} else {
		WRITE_ONCE(h->dying, 0);
		if (!scx_bpf_dsq_nr_queued(c))
			drain_done(h);
	}
	scx_bpf_put_cpumask(online);
	return 0;
}

/*
 * The guard cleared @c's guard_need bit: its queue empty, local queue
 * empty, nothing draining. What the guard timed for it starts afresh when
 * the bit is set again.
 */
void hotplug_guard_released(s32 c)
{
	struct cpu_release *rl = &cpu_releases[CPU_IDX(c)];

	cpu_hps[CPU_IDX(c)].queued_seen_j = 0;
	rl->rt_seen_at = 0;
	rl->local_seen_at = 0;
}

/*
 * From the guard timer, at jiffy @now_j, for CPU @c it looks at (guard_need):
 * - an online CPU that idles while its own queue holds tasks is kicked: its
 *   enqueue-time kick can be lost around hotplug;
 * - a queue unserved for CHAMELEON_RESCUE_NS (chameleon_unserved_j()), or
 *   that a higher class has held for CHAMELEON_RELEASE_NS (it told us, or
 *   rt_held_long()), is drained like an offline CPU's;
 * - a local queue no scx task has served for CHAMELEON_RELEASE_NS goes back
 *   to enqueue (7.1+: the kernel re-enqueues a remote local queue; before,
 *   enqueue never puts a movable task into another CPU's local queue);
 * - a draining queue is moved out.
 * Global: the guard's loop verifies one call, not each of its branches.
 */
int hotplug_guard_cpu(u32 c, u64 now, u64 now_j)
{
	struct cpu_hotplug *h;
	struct cpu_run *cr;
	bool away;

	if (!cpu_valid(c))
		return 0;
	h = &cpu_hps[CPU_IDX(c)];
	cr = cpu_run(c);
	away = chameleon_released_long(released_at(c), now, CHAMELEON_RELEASE_NS);

	if (__COMPAT_has_generic_reenq()) {
		struct cpu_release *rl = &cpu_releases[CPU_IDX(c)];
		int reenq;

		rl->local_seen_at = chameleon_local_linger(
			scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL_ON | c) && !READ_ONCE(cr->running),
			rl->local_seen_at, now, CHAMELEON_RELEASE_NS, &reenq);
		if (reenq)
			scx_bpf_dsq_reenq___compat(SCX_DSQ_LOCAL_ON | c, 0);
	}
	/*
	 * The real count, not queue_hint(): the guard is what serves a queue
	 * whatever went wrong elsewhere, a hint left clear among it.
	 */
	if (!scx_bpf_dsq_nr_queued(c)) {
		h->queued_seen_j = 0;
		cpu_releases[CPU_IDX(c)].rt_seen_at = 0;
		if (h->drain && !h->dying)
			drain_done(h);
		return 0;
	}
	if (!h->queued_seen_j)
		h->queued_seen_j = now_j ?: 1;
	/*
	 * An RT task the kernel did not tell us of holds the CPU while
	 * its queue waits: as long as one it told us of (away).
	 */
	if (rt_held_long(c, now))
		away = true;
	/* A lent CPU idles on purpose: the lending bound serves its queue. */
	if (h->online && !cr->running && !cpu_lent(c))
		kick_cpu(c, SCX_KICK_IDLE);
	if (!cpu_lent(c) && !h->drain &&
	    (jiffies_to_ns(chameleon_unserved_j(now_j, READ_ONCE(cr->dispatched_j), h->queued_seen_j)) >
		     CHAMELEON_RESCUE_NS || away)) {
		drain_start(c);
		__sync_fetch_and_add(&nr_rescued, 1);
	}
	if (h->drain)
		move_queue(c, h->online && !h->dying ? MOVE_MOVABLE : MOVE_ALL);
	return 0;
}
