/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A higher class takes a CPU from us (ops.cpu_release): the pure rules, with
 * no BPF helpers, so that the host tests what the policy runs (tests/host/).
 *
 * The kernel says so once, then nothing until the CPU is ours again
 * (ops.cpu_acquire). Whatever stays in the CPU's local queue meanwhile waits
 * for every higher-class task that runs there, one after the other: a per-CPU
 * kthread's turn (idle injection, the stopper) is short, but an RT task that
 * comes right after it is not announced again, and a task left in the
 * local queue waits behind it as long as it runs. So the local queue always
 * goes back to ops.enqueue, and what a kthread's short turn needs is kept
 * otherwise: its tasks stay at the front of the CPU's own queue, unstolen,
 * while the hold is fresh (a task slowed by idle injection must not run
 * elsewhere: the emulation would be lost). A CPU that is away longer, to
 * whatever class, has its queue drained to the others: CPUs busy with their
 * own queues never steal, and the general rescue waits 200 ms.
 */
#ifndef __CHAMELEON_PREEMPT_H
#define __CHAMELEON_PREEMPT_H

#include "vtime.h"

/*
 * How long a CPU a higher class took keeps its queue to itself. Longer than
 * the emulation's longest idle period (5 ms nominal at 50 %, at most 3x that
 * with its compensation) and the stopper's turns; short against the waits we
 * bound (the lending bound, CHAMELEON_STARVE_NS). Past it, the CPU's queue is
 * drained to the others (hotplug_guard) whoever took the CPU.
 */
#define CHAMELEON_RELEASE_NS	(50ULL * 1000 * 1000)

/* The kernel's MAX_RT_PRIO (a macro, not in BTF): below it, RT, deadline, stop. */
#define CHAMELEON_MAX_RT_PRIO	100

/*
 * A CPU a per-CPU kthread took at @released_at (@by_kthread; 0: the CPU is
 * ours) still holds its queue: nobody steals from it yet.
 */
static inline int chameleon_kthread_holds(u64 released_at, int by_kthread,
					  u64 now, u64 hold_ns)
{
	return released_at && by_kthread && chameleon_time_since(now, released_at) < hold_ns;
}

/* A CPU a higher class took at @released_at has been away too long: drain it. */
static inline int chameleon_released_long(u64 released_at, u64 now, u64 hold_ns)
{
	return released_at && chameleon_time_since(now, released_at) >= hold_ns;
}

/*
 * A CPU's local queue holds tasks and no scx task runs there (@lingers, as the
 * guard timer sees it every tick); @seen_at: since when, 0 if not at the last
 * tick. Returns the new @seen_at, and sets *@reenq when it has lasted
 * @hold_ns: the queue goes back to ops.enqueue. An idle CPU picks its local
 * queue within a tick; one a higher class holds does not, and the kernel says
 * nothing in two cases: a higher class that takes an idle CPU into whose local
 * queue a task was just put (the RT task waking there picks first; no scx task
 * was running, so no cpu_release), and a running task that becomes RT itself
 * (sched_setscheduler(), a PI boost: the class changes under it).
 */
static inline u64 chameleon_local_linger(int lingers, u64 seen_at, u64 now,
					 u64 hold_ns, int *reenq)
{
	*reenq = 0;
	if (!lingers)
		return 0;
	if (!seen_at)
		return now ?: 1;
	if (now - seen_at < hold_ns)
		return seen_at;
	*reenq = 1;
	return 0;
}

/*
 * The vtime at which a task a kthread pushed off its CPU goes back into that
 * CPU's queue: at the front (just before the head, @has_head), where the
 * local queue had it, unless it is there already. It was running and would
 * have gone on: the kthread's turn is not its to pay for.
 */
static inline u64 chameleon_vtime_resume(u64 vtime, u64 head_vtime, int has_head)
{
	if (!has_head || (s64)(vtime - head_vtime) < 0)
		return vtime;
	return head_vtime - 1;
}

#endif /* __CHAMELEON_PREEMPT_H */
