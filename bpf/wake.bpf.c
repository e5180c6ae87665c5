/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A task's wake and sleep, as the policy keeps account of them: its tag
 * checked (a retag tells the agent), the count of runnable untagged tasks
 * that the node manager keeps CPUs native for, and the agent told of the
 * sleep of a task that holds an object, and of its wake. A sleep is seen in
 * stopping(!runnable), a wake in the first op that places the task after it
 * (task_wakes(), inline in chameleon.bpf.h); there is no ops.runnable or
 * ops.quiescent (main.bpf.c).
 * The tags in force live here (map `tags`, intf.h: struct chameleon_tag).
 */
#include "chameleon.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, CHAMELEON_MAX_TAGS);
	__type(key, u64);			/* cgroup id */
	__type(value, struct chameleon_tag);
} tags SEC(".maps");

/* A new cgroup @cgid inherits the tag in force for its parent, if it has none. */
void tag_inherit(u64 cgid, u64 parent)
{
	struct chameleon_tag *tag = bpf_map_lookup_elem(&tags, &parent);

	if (tag)
		bpf_map_update_elem(&tags, &cgid, tag, BPF_NOEXIST);
}

/* A removed cgroup's tag is dropped. */
void tag_drop(u64 cgid)
{
	bpf_map_delete_elem(&tags, &cgid);
}

/* The object level the tag in force for cgroup @cgid asks for (0: none). */
u32 tag_level(u64 cgid)
{
	struct chameleon_tag *tag = bpf_map_lookup_elem(&tags, &cgid);

	return tag ? chameleon_tag_object_level(tag->level, tag->smt) : 0;
}

/*
 * The tag in force for @p may have changed (the agent rewrote tags, or the
 * task is in another leaf cgroup now): tell the agent (DEMAND with the object
 * level, 0 = no longer wants one). A fused object it may no longer hold is
 * split now; the agent withdraws it shortly.
 */
static void retag(struct task_struct *p, struct task_ctx *tctx, u64 cgid)
{
	u32 level = tag_level(cgid);
	s32 cpu = task_cpu_of(p);

	tctx->tags_gen = tags_gen;
	tctx->cgid = cgid;
	if (!level && !tctx->tagged)
		return;
	if (!level)
		split_owned(tctx, p->pid, CHAMELEON_SPLIT_RETAG);
	tctx->tagged = level > 0;
	emit_demand(p, tctx, cpu, cgid, level);
}

/* Cheap enough for every enqueue: two compares unless something changed. */
void tag_check(struct task_struct *p, struct task_ctx *tctx)
{
	u64 cgid = task_cgroup_id(p);

	if (tctx->tags_gen != tags_gen || tctx->cgid != cgid)
		retag(p, tctx, cgid);
}

/*
 * @p runs on past its slice without an enqueue (dispatch's renew()): what
 * enqueue would check, checked here, its tag and its untagged count. A task
 * that never sleeps, alone on its CPU, is renewed slice after slice: moved
 * into a tagged cgroup, or its cgroup tagged, it would otherwise wait for
 * the first other task on its CPU to be tagged and to ask for its object.
 */
void tag_check_renewed(struct task_struct *p __arg_trusted)
{
	struct task_ctx *tctx = task_ctx(p);

	if (!tctx)
		return;
	tag_check(p, tctx);
	count_untagged(p, tctx, true);
}

/*
 * A tagged task without an object whose DEMAND may have been lost (a DEMAND
 * was dropped since it last asked: demand_lost()) asks again, so that no
 * task stays without its object because the agent was slow once.
 */
void redemand_if_lost(struct task_struct *p, struct task_ctx *tctx)
{
	u32 level;

	if (!demand_lost(tctx))
		return;
	level = tag_level(tctx->cgid);
	if (level)
		emit_demand(p, tctx, task_cpu_of(p), tctx->cgid, level);
	else
		tctx->demand_drops = READ_ONCE(nr_demand_dropped);
}

/*
 * Keep @p in the count of runnable untagged tasks iff it is runnable (@add),
 * untagged and not the agent. The node manager keeps that many CPUs native
 * (untagged load). The counter changed is the calling CPU's, whatever CPU
 * @p is on: only that CPU writes it, and every op that calls this runs with
 * interrupts off, so plain increments do (select_cpu, which counts a wake
 * now, holds no runqueue lock: a counter of @p's CPU would lose updates).
 * Only the sum means anything. Only a wake, stopping(!runnable), leaving
 * sched_ext and a tag change move the count: the kernel calls none for a
 * migration, so a task moving between CPUs is never missed, as it is by
 * /proc/stat's procs_running, which the kernel sums without a lock.
 */
void count_untagged(struct task_struct *p, struct task_ctx *tctx, bool add)
{
	bool want = add && !tctx->tagged && p->tgid != agent_tgid;
	s32 cpu = bpf_get_smp_processor_id();

	if (want == !!tctx->counted || !cpu_valid(cpu))
		return;
	tctx->counted = want;
	if (want)
		cpu_stats[CPU_IDX(cpu)].nr_untagged++;
	else
		cpu_stats[CPU_IDX(cpu)].nr_untagged--;
}

/*
 * @p stops being runnable (stopping() with !runnable: it blocks, exits or
 * is dequeued for a property change while it runs; a queued task that
 * never ran cannot block). The agent frees the object of a long sleeper,
 * so a sleeping task that holds one is reported (and its wake, then);
 * tagged tasks without an object cost no event. Done here rather than in
 * ops.quiescent: one struct_ops call less per sleep, and a task dequeued
 * for a property change while queued stays counted.
 */
void task_leaves(struct task_struct *p, struct task_ctx *tctx, s32 cpu)
{
	tctx->awake = 0;
	count_untagged(p, tctx, false);
	if (!tctx->tagged || p->__state == 0 /* TASK_RUNNING: not a sleep */)
		return;
	if (!has_assignment(p))
		return;
	tctx->sleep_told = 1;
	emit(CHAMELEON_EV_SLEEP, cpu, p, false);
}
