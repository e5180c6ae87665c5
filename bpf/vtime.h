/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Virtual-time arithmetic, with no BPF helpers so that the host can compile
 * and unit-test exactly the code the BPF policy runs (tests/host/).
 *
 * Each CPU keeps its own virtual clock (like a CFS runqueue's min_vruntime):
 * the largest vtime that has started running there. A task's vtime is only
 * meaningful relative to the clock of the CPU whose queue it is on, so it is
 * rebased when it moves to another CPU's queue.
 */
#ifndef __CHAMELEON_VTIME_H
#define __CHAMELEON_VTIME_H

#include "intf.h"

/* Weight of a nice-0 task in sched_ext (p->scx.weight is 1..10000). */
#define CHAMELEON_WEIGHT_DFL	100ULL
#define CHAMELEON_WEIGHT_MIN	1ULL
#define CHAMELEON_WEIGHT_MAX	10000ULL

/*
 * A single charge never exceeds this much run time. Keeps delta * 100 far from
 * overflow even if a timestamp goes wrong, and bounds the damage of one bad
 * sample to a few slices.
 */
#define CHAMELEON_MAX_CHARGE_NS	(1000ULL * 1000 * 1000)

/* Wrap-safe "a is earlier than b" on virtual times. */
static inline int chameleon_vtime_before(u64 a, u64 b)
{
	return (s64)(a - b) < 0;
}

/*
 * How long ago @at was at @now, 0 if @at is later. A timer or a hook takes
 * @now once and then reads timestamps other CPUs keep writing: one written
 * in between is newer than @now, and a plain subtraction reads it as 584
 * years ago.
 */
static inline u64 chameleon_time_since(u64 now, u64 at)
{
	return (s64)(now - at) > 0 ? now - at : 0;
}

/* Virtual time a task of @weight accrues for running @delta_ns. */
static inline u64 chameleon_vtime_charge(u64 delta_ns, u64 weight)
{
	if (delta_ns > CHAMELEON_MAX_CHARGE_NS)
		delta_ns = CHAMELEON_MAX_CHARGE_NS;
	if (weight < CHAMELEON_WEIGHT_MIN)
		weight = CHAMELEON_WEIGHT_MIN;
	return delta_ns * CHAMELEON_WEIGHT_DFL / weight;
}

/*
 * A task that slept keeps at most @credit of virtual time in hand: otherwise a
 * long sleeper would wake far behind the clock and monopolise the CPU.
 */
static inline u64 chameleon_vtime_floor(u64 vtime, u64 clock, u64 credit)
{
	if (chameleon_vtime_before(vtime, clock - credit))
		return clock - credit;
	return vtime;
}

/*
 * Bounded waits: a task queued behind a running task of weight @curr_weight
 * waits until the CPU's clock reaches its vtime, and the clock advances by
 * 100 / curr_weight per ns of that task's run. Holding the vtime within the
 * virtual time that task accrues in @bound_ns bounds the wait to @bound_ns,
 * whatever the two weights (nice -20 against nice 19 would otherwise wait
 * ~43 s per slice). Within the bound, weights are honoured exactly.
 */
static inline u64 chameleon_vtime_cap(u64 vtime, u64 clock, u64 bound_ns,
				      u64 curr_weight)
{
	u64 lag;

	if (curr_weight < CHAMELEON_WEIGHT_DFL)
		curr_weight = CHAMELEON_WEIGHT_DFL;
	if (curr_weight > CHAMELEON_WEIGHT_MAX)
		curr_weight = CHAMELEON_WEIGHT_MAX;
	lag = bound_ns * CHAMELEON_WEIGHT_DFL / curr_weight;
	if (chameleon_vtime_before(clock + lag, vtime))
		return clock + lag;
	return vtime;
}

/*
 * Wakeup preemption: a task waking onto a CPU whose running task is ahead of
 * it in virtual time by more than @gran_ns of that task's run takes the CPU
 * now, not at the end of the running task's slice. @wake_vtime is the waking
 * task's vtime as queued (floored: at most one slice of credit), @curr_vtime
 * the running task's when it started, @ran_ns how long it has run since, at
 * @curr_weight. The running task keeps the CPU for @gran_ns at least, so two
 * tasks that wake each other (a pipe) do not switch at every wake; a waker
 * that is not owed the CPU (it ran as much) waits its turn. @gran_ns 0: never.
 */
static inline int chameleon_wake_preempts(u64 wake_vtime, u64 curr_vtime, u64 ran_ns,
					  u64 curr_weight, u64 gran_ns)
{
	u64 now_vtime;

	if (!gran_ns || ran_ns < gran_ns)
		return 0;
	now_vtime = curr_vtime + chameleon_vtime_charge(ran_ns, curr_weight);
	return chameleon_vtime_before(wake_vtime + chameleon_vtime_charge(gran_ns, curr_weight),
				      now_vtime);
}

/*
 * A task's weight with its cgroup's cpu.weight (@cg_weight, 0: none, the
 * root's tasks): its own (nice) weight scaled by cg_weight / 100 and shared
 * among the cgroup's @nr_runnable tasks, as CFS shares a group's weight
 * among the CPUs its load is on. One task per cgroup at 100 and 300 splits
 * a CPU 1:3; a cgroup of four runnable tasks at 100 weighs, all together,
 * what one task at 100 of another cgroup does.
 */
static inline u64 chameleon_group_weight(u64 task_weight, u64 cg_weight,
					 u64 nr_runnable)
{
	u64 w;

	if (!cg_weight)
		return task_weight;
	if (nr_runnable < 1)
		nr_runnable = 1;
	w = task_weight * cg_weight / CHAMELEON_WEIGHT_DFL / nr_runnable;
	if (w < CHAMELEON_WEIGHT_MIN)
		return CHAMELEON_WEIGHT_MIN;
	if (w > CHAMELEON_WEIGHT_MAX)
		return CHAMELEON_WEIGHT_MAX;
	return w;
}

/* Move @vtime from the clock of one CPU to the clock of another. */
static inline u64 chameleon_vtime_rebase(u64 vtime, u64 from_clock, u64 to_clock)
{
	return vtime - from_clock + to_clock;
}

/* Advance a CPU's clock to @vtime if that is later (the clock never goes back). */
static inline u64 chameleon_vtime_advance(u64 clock, u64 vtime)
{
	return chameleon_vtime_before(clock, vtime) ? vtime : clock;
}

#endif /* __CHAMELEON_VTIME_H */
