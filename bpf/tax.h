/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Taxation (Chameleon §4.3.3), with no BPF helpers so the host tests run it.
 *
 * While a task is fused, its representative CPU charges it delta * 100 / weight
 * as usual, and each borrowed CPU's virtual thread (vruntimes[c]) is charged
 * that times the tax. Tax is fixed point in hundredths, 0.01 .. 100:
 *   tax >> 1  the task hardly ever preempts a neighbour (only idle CPUs lend),
 *   tax == 1  it gets its own CPU plus about half of the neighbour's,
 *   tax << 1  it borrows most of the time.
 */
#ifndef __CHAMELEON_TAX_H
#define __CHAMELEON_TAX_H

#include "vtime.h"

#define CHAMELEON_TAX_ONE	100ULL		/* 1.00 */
#define CHAMELEON_TAX_MIN	1ULL		/* 0.01 */
#define CHAMELEON_TAX_MAX	10000ULL	/* 100.00 */

static inline u64 chameleon_tax_clamp(u64 tax)
{
	if (tax < CHAMELEON_TAX_MIN)
		return CHAMELEON_TAX_MIN;
	if (tax > CHAMELEON_TAX_MAX)
		return CHAMELEON_TAX_MAX;
	return tax;
}

/*
 * Virtual time charged to one borrowed CPU's virtual thread for @delta_ns of
 * fused running. The charge is bounded by vtime_charge() (1 s of run time), so
 * the product stays below 1e9 * 100 * 10000 = 1e15: no overflow.
 */
static inline u64 chameleon_tax_charge(u64 delta_ns, u64 weight, u64 tax)
{
	return chameleon_vtime_charge(delta_ns, weight) * chameleon_tax_clamp(tax) /
	       CHAMELEON_TAX_ONE;
}

#endif /* __CHAMELEON_TAX_H */
