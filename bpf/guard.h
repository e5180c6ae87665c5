/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The guard's pure arithmetic (guard.bpf.c, hotplug.bpf.c), shared with the
 * host tests.
 */
#ifndef __CHAMELEON_GUARD_H
#define __CHAMELEON_GUARD_H

/*
 * Index of the lowest set bit of @w, 0 for 0. A binary search: the BPF
 * backend lowers __builtin_ctzll() to a table load from .rodata.
 */
static inline u32 chameleon_lowest_bit(u64 w)
{
	u32 i = 0;

	if (!(w & 0xffffffffULL)) {
		w >>= 32;
		i += 32;
	}
	if (!(w & 0xffff)) {
		w >>= 16;
		i += 16;
	}
	if (!(w & 0xff)) {
		w >>= 8;
		i += 8;
	}
	if (!(w & 0xf)) {
		w >>= 4;
		i += 4;
	}
	if (!(w & 0x3)) {
		w >>= 2;
		i += 2;
	}
	if (!(w & 0x1))
		i += 1;
	return i;
}

/*
 * Jiffies a queue holding tasks has gone unserved at @now_j: since its CPU
 * last dispatched (@dispatched_j) or since the guard first found it holding
 * tasks (@seen_j, 0: not yet), whichever is later. A CPU that idled for
 * long dispatches again as soon as a task arrives: its old dispatch alone
 * would read as a queue unserved for all that time.
 */
static inline u64 chameleon_unserved_j(u64 now_j, u64 dispatched_j, u64 seen_j)
{
	u64 since = dispatched_j;

	if (seen_j && (s64)(seen_j - dispatched_j) > 0)
		since = seen_j;
	return (s64)(now_j - since) > 0 ? now_j - since : 0;
}

/*
 * How many CPUs the guard's sweep looks at in one pass: every CPU within
 * @nr_cpus / @per_pass passes, at most @per_pass a pass.
 */
static inline u32 chameleon_sweep_len(u32 nr_cpus, u32 per_pass)
{
	return nr_cpus < per_pass ? nr_cpus : per_pass;
}

/*
 * A CPU whose guard_need bit is set that serves its own queue: NATIVE, one
 * of our tasks running on it (so no higher class holds it and a kick would
 * find it busy), online and not being drained, no task named starved, and
 * a dispatch within @served_ns (@since_dispatch_ns ago). Every bound the
 * guard keeps for such a CPU but the starved tail is kept by the CPU
 * itself: its next dispatch serves its queue, and the rescue of an
 * unserved queue (CHAMELEON_RESCUE_NS, well above @served_ns) needs a
 * stretch without dispatch, which makes it not served for the passes
 * before the rescue is due.
 */
static inline int chameleon_guard_served(int native, int running, int online, int draining,
					 s32 starved_pid, u64 since_dispatch_ns, u64 served_ns)
{
	return native && running && online && !draining && !starved_pid &&
	       since_dispatch_ns < served_ns;
}

/*
 * Whether pass @pass looks at the tail of served CPU @cpu's queue: once
 * every @every passes (a power of two), the CPUs spread over them, so that
 * a pass under load looks at nr_cpus / @every tails.
 */
static inline int chameleon_guard_tail_turn(u32 cpu, u64 pass, u32 every)
{
	return ((cpu + pass) & (every - 1)) == 0;
}

#endif /* __CHAMELEON_GUARD_H */
