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

#endif /* __CHAMELEON_GUARD_H */
