/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's debug dump (watchdog exit, scx_bpf_error(), SysRq-D) with our
 * state in it: the execution objects (representative, owner, the CPUs lent to
 * it), then per CPU whether it is lent or fused, who waits on it while lent,
 * draining after hotplug, how long its queue is; per task its tag and object.
 * The agent prints the exit dump; its size is --exit-dump-len. Best effort:
 * read without locks, and never on a hot path (O(nr_cpus) is fine here).
 */
#include "chameleon.bpf.h"

void dump_all(void)
{
	u64 now = bpf_ktime_get_ns();
	u32 cpu, nr_objects = 0, nr_lent = 0;

	scx_bpf_dump("chameleon: run_id=%llu up=%llums tags_gen=%llu nr_to_drain=%u rescued=%llu starved=%llu guard_restarts=%llu events dropped=%llu (demand %llu)\n",
		     run_id, (now - init_at) / 1000000, tags_gen, nr_to_drain,
		     nr_rescued, nr_starved, nr_guard_restarts, nr_events_dropped, nr_demand_dropped);
	scx_bpf_dump("chameleon: invariants broken: lent_to_non_rep=%llu owner_gone=%llu queue_forbidden=%llu\n",
		     invariants.lent_to_non_rep, invariants.owner_gone, invariants.queue_forbidden);
	bpf_for(cpu, 0, nr_cpus) {
		struct rep_ctx *rc = rep_ctx(cpu);
		struct cpu_lend *cl = cpu_lend(cpu);
		u32 kind = role_kind(cpu);

		if (!rc)
			break;
		if (kind == CHAMELEON_ROLE_LENT) {
			nr_lent++;
			if (cl->lend_wait_since)
				scx_bpf_dump("chameleon: cpu%u lent to cpu%d, a task waits since %lldus\n",
					     cpu, lent_to(cpu),
					     (s64)(now - cl->lend_wait_since) / 1000);
		}
		if (kind != CHAMELEON_ROLE_REP && kind != CHAMELEON_ROLE_FUSING &&
		    kind != CHAMELEON_ROLE_SPLITTING)
			continue;
		nr_objects++;
		/* The first four CPUs (of nr_cpus); level 3 objects have 8. */
		scx_bpf_dump("chameleon: object rep=cpu%u owner=%d role=%u nr_cpus=%u cpus=%d,%d,%d,%d fused_for=%lldus\n",
			     cpu, rc->owner, kind, rc->nr_cpus, rc->cpus[0],
			     rc->cpus[1], rc->cpus[2], rc->cpus[3],
			     (s64)(now - rc->fused_at) / 1000);
	}
	scx_bpf_dump("chameleon: %u objects, %u CPUs lent\n", nr_objects, nr_lent);
}

void dump_one_cpu(s32 cpu, bool idle)
{
	struct cpu_hotplug *h;
	struct cpu_release *rl;
	struct cpu_lend *cl;
	struct cpu_run *cr;
	struct rep_ctx *rc;
	u32 w;

	if (!cpu_valid(cpu))
		return;
	h = &cpu_hps[CPU_IDX(cpu)];
	rl = &cpu_releases[CPU_IDX(cpu)];
	cl = cpu_lend(cpu);
	cr = cpu_run(cpu);
	rc = &reps[CPU_IDX(cpu)];
	w = role_word(cpu);
	/* An idle CPU with nothing of ours to say stays out of the dump. */
	if (idle && !scx_bpf_dsq_nr_queued(cpu) && w == CHAMELEON_ROLE_NATIVE &&
	    h->online && !h->drain && !rl->released_at)
		return;
	scx_bpf_dump("chameleon: queued=%d online=%u role=%u with=%d drain=%u dying=%u dispatched_ago=%lldms curr_pid=%d",
		     scx_bpf_dsq_nr_queued(cpu), h->online, chameleon_role_kind(w),
		     chameleon_role_with(w), h->drain, h->dying,
		     (s64)jiffies_to_ns(bpf_jiffies64() - cr->dispatched_j) / 1000000, cr->curr_pid);
	scx_bpf_dump("\n            owner=%d nr_cpus=%u pending=0x%llx lend_wait_since=%llu released_at=%llu kthread=%u starved_pid=%d",
		     rc->owner, rc->nr_cpus, rc->pending, cl->lend_wait_since,
		     rl->released_at, rl->released_kthread, cr->starved_pid);
}

void dump_one_task(struct task_struct *p)
{
	struct task_ctx *tctx = task_ctx(p);
	struct chameleon_assignment a;

	if (!tctx)
		return;
	scx_bpf_dump("chameleon: vcpu=%d tagged=%u fused_rep=%d cgid=%llu run_ns=%llu fused_ns=%llu",
		     tctx->vcpu, tctx->tagged, tctx->fused_rep - 1, tctx->cgid,
		     tctx->run_ns, tctx->fused_ns);
	/*
	 * The object the agent gave it, fused or not: dump_all lists only the
	 * objects fused at this instant, and an object splits for a wake or a
	 * tick many times a second.
	 */
	if (assignment_of(p, &a))
		scx_bpf_dump("\nchameleon: assigned nr_cpus=%u cpus=%d,%d,%d,%d gen=%u tax=%u",
			     a.nr_cpus, a.cpus[0], a.cpus[1], a.cpus[2], a.cpus[3],
			     a.generation, a.tax);
}
