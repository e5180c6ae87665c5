/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one placement rule, may_run_on(), inlined where it is asked: every
 * decision about where a task may run (select_cpu, enqueue, stealing, the
 * guard's moves, the drains). role.bpf.c says who each role runs. Apart
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
 * chameleon_place)? role.bpf.c says who each role runs.
 */
static __always_inline bool may_run_on(struct task_struct *p, s32 cpu, u32 why)
{
	if (!cpu_valid(cpu))
		return false;
	/*
	 * An idle search of p->cpus_ptr gives only CPUs in it, and a task
	 * allowed on every possible CPU may run on any: no kfunc call for
	 * either (most tasks are the second).
	 */
	if (why != PLACE_PICKED && p->nr_cpus_allowed < nr_cpus &&
	    !bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		return false;
	if (why != PLACE_STAY && (!cpu_online(cpu) || cpu_held(cpu) ||
				 READ_ONCE(cpu_hps[CPU_IDX(cpu)].drain)))
		return false;
	switch (role_kind(cpu)) {
	case CHAMELEON_ROLE_REP:
		return is_pcpu_kthread(p) || READ_ONCE(reps[CPU_IDX(cpu)].owner) == p->pid;
	case CHAMELEON_ROLE_LENT:
		return lent_cpu_runs(cpu, p);
	case CHAMELEON_ROLE_PARKED:
		return !task_movable(p);
	}
	return true;
}

#endif /* __CHAMELEON_ROLE_BPF_H */
