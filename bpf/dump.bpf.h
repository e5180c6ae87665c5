/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The kernel's debug dump (watchdog exit, scx_bpf_error(), SysRq-D) with our
 * state in it: the execution objects (representative, owner, the CPUs lent to
 * it), then per CPU whether it is lent or fused, who waits on it while lent,
 * draining after hotplug, how long its queue is; per task its tag and object.
 * The agent prints the exit dump; its size is --exit-dump-len. Best effort:
 * read without locks, and never on a hot path (O(nr_cpus) is fine here).
 */

void BPF_STRUCT_OPS(chameleon_dump, struct scx_dump_ctx *dctx)
{
	u64 now = bpf_ktime_get_ns();
	u32 cpu, nr_objects = 0, nr_lent = 0;

	scx_bpf_dump("chameleon: run_id=%llu up=%llums tags_gen=%llu nr_to_drain=%u rescued=%llu starved=%llu events dropped=%llu\n",
		     run_id, (now - init_at) / 1000000, tags_gen, nr_to_drain,
		     nr_rescued, nr_starved, nr_events_dropped);
	bpf_for(cpu, 0, nr_cpus) {
		struct rep_ctx *rc = rep_ctx(cpu);
		struct cpu_ctx *cc = cpu_ctx(cpu);

		if (!rc)
			break;
		if (cc->borrowed_by) {
			nr_lent++;
			if (cc->lend_wait_since)
				scx_bpf_dump("chameleon: cpu%u lent to cpu%d, a task waits since %lldus\n",
					     cpu, cc->borrowed_by - 1,
					     (s64)(now - cc->lend_wait_since) / 1000);
		}
		if (rc->state == REP_NATIVE)
			continue;
		nr_objects++;
		/* The first four CPUs (of nr_cpus); level 3 objects have 8. */
		scx_bpf_dump("chameleon: object rep=cpu%u owner=%d state=%u nr_cpus=%u cpus=%d,%d,%d,%d fused_for=%lldus\n",
			     cpu, rc->owner, rc->state, rc->nr_cpus, rc->cpus[0],
			     rc->cpus[1], rc->cpus[2], rc->cpus[3],
			     (s64)(now - rc->fused_at) / 1000);
	}
	scx_bpf_dump("chameleon: %u objects, %u CPUs lent\n", nr_objects, nr_lent);
}

void BPF_STRUCT_OPS(chameleon_dump_cpu, struct scx_dump_ctx *dctx, s32 cpu,
		    bool idle)
{
	struct cpu_ctx *cc;
	struct rep_ctx *rc;

	if (!cpu_valid(cpu))
		return;
	cc = cpu_ctx(cpu);
	rc = &reps[CPU_IDX(cpu)];
	/* An idle CPU with nothing of ours to say stays out of the dump. */
	if (idle && !scx_bpf_dsq_nr_queued(cpu) && !cc->borrowed_by &&
	    rc->state == REP_NATIVE && cc->online && !cc->drain && !cc->parked)
		return;
	scx_bpf_dump("chameleon: queued=%d online=%u parked=%u drain=%u dying=%u dispatched_ago=%lldus curr_pid=%d",
		     scx_bpf_dsq_nr_queued(cpu), cc->online, cc->parked, cc->drain, cc->dying,
		     (s64)(bpf_ktime_get_ns() - cc->dispatched_at) / 1000, cc->curr_pid);
	scx_bpf_dump("\n            borrowed_by=%d rep_state=%u owner=%d nr_cpus=%u pending=0x%llx lend_wait_since=%llu released_at=%llu kthread=%u starved_pid=%d",
		     cc->borrowed_by - 1, rc->state, rc->owner, rc->nr_cpus,
		     rc->pending, cc->lend_wait_since, cc->released_at,
		     cc->released_kthread, cc->starved_pid);
}

void BPF_STRUCT_OPS(chameleon_dump_task, struct scx_dump_ctx *dctx,
		    struct task_struct *p)
{
	struct task_ctx *tctx = task_ctx(p);

	if (!tctx)
		return;
	scx_bpf_dump("chameleon: vcpu=%d tagged=%u fused_rep=%d cgid=%llu run_ns=%llu fused_ns=%llu",
		     tctx->vcpu, tctx->tagged, tctx->fused_rep - 1, tctx->cgid,
		     tctx->run_ns, tctx->fused_ns);
}
