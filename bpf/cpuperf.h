/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The performance target for a CPU's recent use (fast.bpf.c), pure so
 * that the host tests it: @busy_ns of @span_ns with a quarter of headroom,
 * on the kernel's scale (1024: full performance), as schedutil maps a CFS
 * CPU's utilisation to a frequency.
 */
#ifndef __CHAMELEON_CPUPERF_H
#define __CHAMELEON_CPUPERF_H

#define CHAMELEON_PERF_ONE	1024ULL

static inline u32 chameleon_perf_target(u64 busy_ns, u64 span_ns)
{
	u64 perf;

	if (!span_ns || busy_ns >= span_ns)
		return CHAMELEON_PERF_ONE;
	perf = busy_ns * CHAMELEON_PERF_ONE / span_ns;
	perf += perf / 4;
	return perf > CHAMELEON_PERF_ONE ? CHAMELEON_PERF_ONE : perf;
}

#endif /* __CHAMELEON_CPUPERF_H */
