/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A task enters sched_ext (ops.enable: at attach, fork, or back from
 * another class), leaves it (ops.disable: exit, detach, or a class change:
 * a priority-inheritance boost, sched_setscheduler()) and dies
 * (ops.exit_task). Leaving is not dying: a boosted task comes back through
 * enable(), the same task with the same object, and the agent hears of an
 * exit only from a task that exits.
 */
#include "chameleon.bpf.h"

/* The agent hears of a tagged task's exit once. */
static void exit_told(struct task_struct *p, struct task_ctx *tctx)
{
	if (tctx->exit_told)
		return;
	tctx->exit_told = 1;
	emit_exit(p, task_cpu_of(p), BPF_CORE_READ(p, se.sum_exec_runtime), tctx->fused_ns);
}

void life_enable(struct task_struct *p __arg_trusted, struct task_ctx *tctx)
{
	s32 cpu = task_cpu_of(p);
	u64 cgid = task_cgroup_id(p);
	struct {
		u32 assign_gen;
		u64 run_ns, fused_ns;
		u64 vruntimes[CHAMELEON_OBJ_MAX_CPUS];
	} keep = {};
	u64 wcg;

	if (!tctx)
		return;
	/*
	 * A task back from another class is the same task: its virtual
	 * threads and the object they refer to stay (place_vthreads() brings
	 * them to the CPUs' clocks, its tax debt kept), as do its run totals.
	 * Everything else described a run that life_disable() ended.
	 */
	if (tctx->enabled_before) {
		keep.assign_gen = tctx->assign_gen;
		keep.run_ns = tctx->run_ns;
		keep.fused_ns = tctx->fused_ns;
		__builtin_memcpy(keep.vruntimes, tctx->vruntimes, sizeof(keep.vruntimes));
	}
	wcg = tctx->wcg;
	__builtin_memset(tctx, 0, sizeof(*tctx));
	tctx->enabled_before = 1;
	tctx->assign_gen = keep.assign_gen;
	tctx->run_ns = keep.run_ns;
	tctx->fused_ns = keep.fused_ns;
	__builtin_memcpy(tctx->vruntimes, keep.vruntimes, sizeof(keep.vruntimes));
	tctx->wcg = wcg;
	tctx->cgid = cgid;
	tctx->vcpu = cpu_valid(cpu) ? cpu : -1;
	task_vtime_set(p, tctx, cpu_valid(cpu) ? cpu_run(cpu)->vclock : 0);
	/*
	 * Untagged, its tag stale: its first enqueue (a wake, a fork's first
	 * run, the attach's re-enqueue of a runnable task) reads the tag and a
	 * tagged task asks for its object then (tag_check). Not here: a task
	 * asleep at attach would ask for CPUs it does not use, and the
	 * rotation would serve it in turn, never hearing that it sleeps (a
	 * task without an object sends no sleep events).
	 */
	tctx->tags_gen = tags_gen - 1;
}

void life_disable(struct task_struct *p __arg_trusted, struct task_ctx *tctx)
{
	if (!tctx)
		return;
	/*
	 * Leaving while counted runnable: no stopping(!runnable) follows to
	 * uncount it.
	 */
	count_untagged(p, tctx, false);
	cg_count(tctx, false);
	if (tctx->fused_rep) {
		struct rep_ctx *rc = rep_ctx(tctx->fused_rep - 1);

		split_owned(tctx, p->pid, CHAMELEON_SPLIT_EXIT);
		/*
		 * tick() charges the owner by pid: a reused pid must not match.
		 * Only if it is still ours: another task's try_fuse() may have
		 * taken the representative since.
		 */
		if (rc)
			__sync_val_compare_and_swap(&rc->owner, p->pid, 0);
	}
	/* Only a tagged task's exit matters to the agent; run time is the kernel's account. */
	if (tctx->tagged && (p->flags & PF_EXITING))
		exit_told(p, tctx);
}

/* One that left sched_ext alive (boosted) and died outside it is told here. */
void life_exit(struct task_struct *p __arg_trusted, struct task_ctx *tctx)
{
	if (tctx && tctx->tagged && (p->flags & PF_EXITING))
		exit_told(p, tctx);
}
