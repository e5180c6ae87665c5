/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The weight a task's run is charged at, inlined where a run is charged.
 * Apart from chameleon.bpf.h because it asks weight.bpf.c (task_weight()).
 */
#ifndef __CHAMELEON_WEIGHT_BPF_H
#define __CHAMELEON_WEIGHT_BPF_H

#include "chameleon.bpf.h"

/*
 * The weight @p's current run is charged at: the one running() (or renew())
 * took as it started, so that stopping, keep_prev and the tax do no
 * lookup of its cgroup's weight.
 */
static __always_inline u64 run_weight(struct task_struct *p, struct task_ctx *tctx)
{
	return tctx->weight ? tctx->weight : task_weight(p, tctx);
}

#endif /* __CHAMELEON_WEIGHT_BPF_H */
