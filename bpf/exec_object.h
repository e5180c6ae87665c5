/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Execution-object decisions (Chameleon §3.3, §4.3.1, §4.3.2), with no BPF
 * helpers so the host tests run exactly this code.
 *
 * An object is a list of CPUs: cpus[0] is the representative (where the task
 * is queued and runs), the others are borrowed while it is fused. The agent
 * orders them so that every power-of-two prefix is itself a valid object
 * (an SMT pair, then the neighbouring pair, ...): a partial fuse is a prefix.
 */
#ifndef __CHAMELEON_EXEC_OBJECT_H
#define __CHAMELEON_EXEC_OBJECT_H

#include "intf.h"
#include "vtime.h"

/*
 * May the task's virtual thread on a CPU take that CPU now? Only if the CPU
 * is online and either idle or running something whose vtime is later than
 * the virtual thread's place in that CPU's queue.
 */
static inline int chameleon_may_borrow(int online, int idle, u64 vruntime,
				       u64 curr_vtime, int hold)
{
	if (!online)
		return 0;
	return hold || idle || chameleon_vtime_before(vruntime, curr_vtime);
}

/*
 * Size of the object to fuse, given @ok (bit i set: cpus[i] may be borrowed;
 * bit 0, the representative, is implied) for an object of @nr_cpus: the
 * largest power-of-two prefix whose CPUs all qualify. 1 means run natively.
 */
static inline u32 chameleon_fuse_size(u32 nr_cpus, u32 ok)
{
	u32 size = CHAMELEON_OBJ_MAX_CPUS, i;

	ok |= 1;
	for (i = 0; i < 4; i++, size >>= 1) {
		u32 need = (1U << size) - 1;

		if (size > nr_cpus || size < 2)
			continue;
		if ((ok & need) == need)
			return size;
	}
	return 1;
}

/*
 * Must a fused object split because of a task waiting on one borrowed CPU
 * (§4.3.2)? Yes once the object has run its minimum granularity and the
 * waiter's vtime is earlier than the virtual thread's place on that CPU.
 */
static inline int chameleon_must_split(u64 fused_ns, u64 min_gran_ns,
				       int has_waiter, u64 waiter_vtime,
				       u64 vruntime)
{
	return fused_ns >= min_gran_ns && has_waiter &&
	       chameleon_vtime_before(waiter_vtime, vruntime);
}

/*
 * The lending bound (ours; the paper ran on CFS, which has no watchdog): a
 * lent CPU on which a task has waited since @wait_since (0: nobody waits) is
 * given back once that wait reaches @bound_ns, whatever the vtimes say.
 */
static inline int chameleon_lend_due(u64 now, u64 wait_since, int has_waiter,
				     u64 bound_ns)
{
	return has_waiter && wait_since && chameleon_time_since(now, wait_since) >= bound_ns;
}

/*
 * The lending bound for a lent CPU's waiters: @bound_ns (--lend-wait-ms) if
 * one of them can run on that CPU only (@pinned), else @move_ns later. Those
 * may run elsewhere: from the bound on, the guard moves them out at every
 * pass (its goal is that they run, not that they run there), and the object
 * splits for them only if no other CPU would take them for @move_ns. The
 * other CPUs can all refuse for a moment (the emulation's idle injection
 * takes every native CPU at once) or for good (a full machine).
 */
static inline u64 chameleon_lend_bound(u64 bound_ns, int pinned, u64 move_ns)
{
	return pinned ? bound_ns : bound_ns + move_ns;
}

/*
 * When the wait on a lent CPU began, for the lending bound: the earlier of
 * what we recorded (@wait_since, 0 if nothing) and what the kernel accounts
 * to the queue's longest waiter (@kernel_waited_ns before @now, from
 * p->scx.runnable_at, which the watchdog reads). A path that queues a
 * waiter without recording it then still ends the lend within the bound:
 * the kernel's account covers every waiter.
 */
static inline u64 chameleon_lend_wait_start(u64 now, u64 wait_since,
					    u64 kernel_waited_ns)
{
	u64 seen;

	if (!kernel_waited_ns || kernel_waited_ns >= now)
		return wait_since;
	seen = now - kernel_waited_ns;
	if (!wait_since || seen < wait_since)
		return seen;
	return wait_since;
}

/*
 * Whether the guard timer leaves a CPU's queue alone this round: it is
 * empty, or a task waiting there past the wait bound is already named
 * (@starved_pid) and the CPU's next dispatch runs it. Not if the CPU is lent
 * (@lent): its dispatch serves only its bound kthreads and never
 * reaches the named task, and the guard's look at the queue is what backs
 * the lending bound with the kernel's account of the wait.
 */
static inline int chameleon_guard_skips(u64 nr_queued, s32 starved_pid, int lent)
{
	return !nr_queued || (starved_pid && !lent);
}

/*
 * May a CPU with @mine tasks queued take the head of a queue of @theirs?
 * An idle CPU (@mine 0) pulls from a queue whose head waits behind another
 * waiter as well as the running task; a busy one only from a queue longer
 * than its own by more than two, so that two busy CPUs never trade a task
 * back and forth.
 */
static inline int chameleon_pull_worth(u64 theirs, u64 mine)
{
	return theirs > mine + (mine ? 2 : 1);
}

/*
 * How a task wakes others with sync wakeups (the waker about to wait for
 * an answer: pipes, sockets): over windows of CHAMELEON_SYNC_WINDOW such
 * wakeups, how many woke another task than the one before (@flips). A
 * waker that flips in more than half of a window wakes many tasks in turn
 * (a writer to many pipes, a server to its clients: @many, kept for the
 * next window); one that wakes the same partner each time (a pipe's two
 * ends) does not.
 */
#define CHAMELEON_SYNC_WINDOW	16

struct chameleon_wake_rec {
	u8 wakes;
	u8 flips;
	u8 many;
	u8 pad;
};

static inline void chameleon_wake_record(struct chameleon_wake_rec *r, int flipped)
{
	r->wakes++;
	if (flipped)
		r->flips++;
	if (r->wakes < CHAMELEON_SYNC_WINDOW)
		return;
	r->many = r->flips * 2 > r->wakes;
	r->wakes = 0;
	r->flips = 0;
}

/*
 * A sync wakeup by a waker of many that the kernel's idle search answered
 * with the waker's own CPU: the kernel gives that answer while nothing waits
 * in the CPU's *local* queue, and ours puts the wakee in the CPU's own queue
 * (behind its waker, to run on the cache the waker just wrote its data into
 * when the waker sleeps), which that test never sees. So one wakee at a time
 * waits there: with @waker_queued tasks already in the waker's queue, the
 * search runs again without the sync hint (an idle CPU, else the wakee's
 * own). Without the bound a storm of wakes (hackbench's start, a server's
 * fan-out) queued every wakee behind one CPU while the others idled.
 */
static inline int chameleon_sync_behind_waker(u64 waker_queued)
{
	return !waker_queued;
}

/*
 * Index into a CPU's steal order for the @i-th look of one dispatch: the
 * @nr_near SMT siblings first, then the others from a rotating @start, so
 * that successive dispatches visit every queue. Returns -1 past the end.
 */
static inline int chameleon_steal_pick(u32 i, u32 nr, u32 nr_near, u32 start)
{
	if (nr_near > nr)
		nr_near = nr;
	if (i < nr_near)
		return i;
	if (i >= nr || nr == nr_near)
		return -1;
	return nr_near + (start + i - nr_near) % (nr - nr_near);
}

/*
 * Where a virtual thread stands when its task becomes runnable: at the CPU's
 * clock, or further on if it still owes tax from earlier fusing (a sleep does
 * not wipe a debt).
 */
static inline u64 chameleon_vthread_place(u64 vruntime, u64 cpu_clock)
{
	return chameleon_vtime_advance(vruntime, cpu_clock);
}

/*
 * The object level a tag asks for, given its SMT class: `smt` tasks share
 * their core and never fuse; `uni` ones want at least their SMT pair
 * (Chameleon §5.5 treats a core as a fused object of its two threads);
 * `kwork` ones their SMT pair exactly (one sibling for kernel work).
 */
static inline u32 chameleon_tag_object_level(u32 level, u32 smt)
{
	if (smt == CHAMELEON_SMT_SMT)
		return 0;
	if (smt == CHAMELEON_SMT_KWORK)
		return 1;
	if (smt == CHAMELEON_SMT_UNI && level < 1)
		return 1;
	return level;
}

#endif /* __CHAMELEON_EXEC_OBJECT_H */
