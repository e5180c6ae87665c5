/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup cpu.weight (the cpu controller's weight; systemd's CPUWeight=).
 *
 * A task's vtime accrues at 100 / its weight, and its weight is its own
 * (nice) weight scaled by its cgroup's cpu.weight / 100 and shared among
 * that cgroup's runnable tasks (chameleon_group_weight(), vtime.h): what
 * CFS does with a group's weight, which it shares among the CPUs its load
 * is on. Two cgroups of one task each at 100 and 300 split a CPU 1:3, as
 * under EEVDF. Without this every task weighed its nice alone, and the same
 * two cgroups split 1:1.
 *
 * The cgroup is the one the kernel passes to the cgroup ops: the nearest
 * one with the cpu controller. Its ancestors' weights are not multiplied in
 * (siblings under one parent compare as CFS compares them; cousins under
 * parents of different weights do not). Root's tasks have no cgroup weight.
 *
 * Cost: a hash lookup and CHAMELEON_CG_SHARDS reads when a task starts
 * running (the weight its run is charged at is kept: run_weight()), and an
 * atomic on one shard of its cgroup's count when it wakes and when it
 * sleeps, each time the shard of the LLC of the CPU it happens on
 * (cpu_cg_shard, from the agent): a shard's line is written from within one
 * LLC only. Only the sum of the shards means anything (a task may wake in
 * one LLC and sleep in another: one shard goes up, the other down, and may
 * go below zero). None for root's tasks.
 */

#include "chameleon.bpf.h"

/* cgroups with the cpu controller we keep a weight for; beyond, tasks weigh their nice. */
#define CHAMELEON_MAX_CGROUPS	16384

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, CHAMELEON_MAX_CGROUPS);
	__type(key, u64);			/* cgroup id */
	__type(value, struct chameleon_cg_weight);
} cg_weights SEC(".maps");

/* The cgroup whose weight a task follows: 0 for root (no weight of its own). */
u64 weight_cgroup_id(struct cgroup *cgrp)
{
	return cgrp && cgrp->level > 0 ? cgrp->kn->id : 0;
}

static struct chameleon_cg_weight *cg_weight_of(u64 cgid)
{
	return cgid ? bpf_map_lookup_elem(&cg_weights, &cgid) : NULL;
}

/*
 * @tctx's task becomes runnable (@on) or sleeps or leaves: count it in its
 * cgroup, once, in the shard of the CPU this runs on. The cgroup it was
 * counted in is kept, so that it is uncounted there even if it moved since.
 */
void cg_count(struct task_ctx *tctx, bool on)
{
	struct chameleon_cg_weight *cw;
	u32 shard;
	u64 id;

	id = on ? tctx->wcg : tctx->wcounted;
	if (!id || (on && tctx->wcounted))
		return;
	cw = cg_weight_of(id);
	tctx->wcounted = on && cw ? id : 0;
	if (!cw)
		return;
	shard = cpu_cg_shard[CPU_IDX(bpf_get_smp_processor_id())] & (CHAMELEON_CG_SHARDS - 1);
	__sync_fetch_and_add(&cw->shards[shard].nr_runnable, on ? 1 : -1);
}

/* @p's weight for its vtime: its nice with its cgroup's cpu.weight. */
u64 task_weight(struct task_struct *p, struct task_ctx *tctx)
{
	struct chameleon_cg_weight *cw = cg_weight_of(tctx->wcg);
	u32 sum = 0, i;
	s32 nr;

	if (!cw)
		return p->scx.weight;
	/* Shards drift apart without bound; their sum, wrapping, does not. */
	for (i = 0; i < CHAMELEON_CG_SHARDS; i++)
		sum += (u32)READ_ONCE(cw->shards[i].nr_runnable);
	nr = (s32)sum;
	return chameleon_group_weight(p->scx.weight, cw->weight, nr > 0 ? nr : 1);
}

/*
 * How long a start may take the weight the task's last start computed: the
 * kernel's tick at HZ=250. A cgroup's cpu.weight or runnable count, or a
 * move to another cgroup, reaches the task's charge that much later at most.
 */
#define CHAMELEON_WEIGHT_TTL_NS	(4ULL * 1000 * 1000)

/*
 * task_weight() as a start takes it (running(), renew()), at @now: the one
 * its last start computed while it is younger than CHAMELEON_WEIGHT_TTL_NS
 * and the task's nice weight is the same. The cgroup's runnable count is a
 * sum of shards that the CPUs of every LLC write at each wake and sleep
 * (cg_count()), and a hash lookup: read at every start on every CPU, those
 * lines would cross the machine at the switch rate; so at most once a tick
 * for each task.
 */
u64 task_weight_at(struct task_struct *p, struct task_ctx *tctx, u64 now)
{
	u32 nice_w = p->scx.weight;

	if (tctx->weight && tctx->weight_nice == nice_w &&
	    chameleon_time_since(now, tctx->weight_at) < CHAMELEON_WEIGHT_TTL_NS)
		return tctx->weight;
	tctx->weight_nice = nice_w;
	tctx->weight_at = now;
	return task_weight(p, tctx);
}

/* A new entry's value (larger than the BPF stack): zero counts, no weight. */
static struct chameleon_cg_weight cg_weight_zero;

/*
 * A cgroup with the cpu controller appears (or exists when we load): its
 * entry, then its weight (until then its tasks weigh their nice alone).
 */
void cg_weight_init(struct cgroup *cgrp, u32 weight)
{
	struct chameleon_cg_weight *cw;
	u64 id = weight_cgroup_id(cgrp);

	/* Full: its tasks weigh their nice alone, as before. */
	if (!id || bpf_map_update_elem(&cg_weights, &id, &cg_weight_zero, BPF_NOEXIST))
		return;
	cw = cg_weight_of(id);
	if (cw)
		WRITE_ONCE(cw->weight, weight);
}

void cg_weight_set(struct cgroup *cgrp, u32 weight)
{
	struct chameleon_cg_weight *cw = cg_weight_of(weight_cgroup_id(cgrp));

	if (cw)
		WRITE_ONCE(cw->weight, weight);
	else
		cg_weight_init(cgrp, weight);
}

/* @p moved to cgroup @to: counted runnable there from now on, if it was here. */
void cg_weight_move(struct task_struct *p, struct cgroup *to)
{
	struct task_ctx *tctx = task_ctx(p);
	bool counted;

	if (!tctx)
		return;
	counted = tctx->wcounted;
	cg_count(tctx, false);
	tctx->wcg = weight_cgroup_id(to);
	if (counted)
		cg_count(tctx, true);
}

/* A removed cgroup's weight is dropped. */
void cg_weight_exit(u64 cgid)
{
	bpf_map_delete_elem(&cg_weights, &cgid);
}
