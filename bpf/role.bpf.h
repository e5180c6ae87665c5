/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one placement rule, may_run_on(), asked by every decision about
 * where a task may run (select_cpu, enqueue, stealing, the guard's moves,
 * the drains); role.bpf.c defines it and says who each role runs. Apart
 * from chameleon.bpf.h because it asks preempt.bpf.c (cpu_held()): only
 * units above preempt include it.
 */
#ifndef __CHAMELEON_ROLE_BPF_H
#define __CHAMELEON_ROLE_BPF_H

#include "chameleon.bpf.h"

/* Why a task is placed, for may_run_on(): the rules differ only by that. */
enum chameleon_place {
	PLACE_NEW	= 0,	/* a CPU to put it on now (idle search, a move) */
	PLACE_STAY	= 1,	/* the CPU it is queued on keeps it */
	PLACE_PICKED	= 2,	/* PLACE_NEW, for a CPU an idle search of its cpus_ptr gave */
};

/*
 * The one placement rule: may @p run on @cpu now (@why: enum
 * chameleon_place)? role.bpf.c defines it; global, so that it is verified
 * once per program, not at each of its many call sites.
 */
bool may_run_on(struct task_struct *p __arg_trusted, s32 cpu, u32 why);

#endif /* __CHAMELEON_ROLE_BPF_H */
