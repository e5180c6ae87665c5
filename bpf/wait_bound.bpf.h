/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The last line of the bounded-wait guarantee: a task that has waited in a
 * queue for CHAMELEON_STARVE_NS runs next on that CPU, whatever its vtime.
 *
 * Why the vtime rules are not enough alone: the cap in enqueue bounds how
 * far ahead of a CPU's clock a task is placed, but the clock advances only
 * as the tasks ahead of it run, and every task that wakes or is forked is
 * placed just behind the clock, ahead of it. Under a stream of new tasks (the
 * scx CI recipe's fork stressors) a light task at the cap waits for as long
 * as the stream lasts: the soak test saw khugepaged (nice 19, 100 ms of
 * vtime ahead) wait 13-14 s behind 20 queued tasks, then the watchdog.
 *
 * How: the guard timer looks at the tail of each CPU's queue (the largest
 * vtime, where a starved light task ends up; O(1) per CPU, off the scheduling
 * path) and, if it has been runnable for longer than the bound by the
 * kernel's own account (p->scx.runnable_at, what the watchdog reads), names
 * it in the CPU's cpu_ctx. That CPU's next dispatch moves that one task to
 * its local queue first. One load per dispatch otherwise.
 */

/* Well under the watchdog (timeout_ms 10 s), above any wait we mean to impose. */
#define CHAMELEON_STARVE_NS	(1000ULL * 1000 * 1000)

extern unsigned long CONFIG_HZ __kconfig __weak;

/* Who a lent CPU runs rather than lets wait (exec_object.bpf.h). */
static bool lent_cpu_runs(s32 cpu, struct task_struct *p);

u64 nr_starved;		/* tasks served out of vtime order by dispatch_starved */

static u64 jiffies_to_ns(u64 j)
{
	u64 hz = CONFIG_HZ ?: 250;

	return j * (1000ULL * 1000 * 1000 / hz);
}

/*
 * From the guard timer: name a starved tail task of each CPU's queue. On a
 * lent CPU the lending bound serves its waiters instead; the kernel's account
 * of the tail's wait backs up our record of when that wait began, so that a
 * wait one path failed to record still ends the lend (exec_object.h).
 */
static void find_starved(u64 now)
{
	u64 now_j = bpf_jiffies64();
	struct task_struct *p;
	u32 c;

	bpf_for(c, 0, nr_cpus) {
		struct cpu_ctx *cc = cpu_ctx(c);

		/*
		 * Named and not yet served: kick again. Only that CPU's own
		 * dispatch serves the named task, and a kick that found it
		 * busy, or one lost to hotplug, would otherwise be the last
		 * (hotplug_storm once: the agent runnable on an idle CPU for
		 * 200 s, no tick anywhere to let the kernel's watchdog see it).
		 */
		if (READ_ONCE(cc->starved_pid) && !cc->borrowed_by)
			scx_bpf_kick_cpu(c, SCX_KICK_IDLE);
		if (chameleon_guard_skips(scx_bpf_dsq_nr_queued(c), cc->starved_pid,
					  cc->borrowed_by))
			continue;
		/* Outside ops, older kernels want the DSQ walked under RCU. */
		bpf_rcu_read_lock();
		bpf_for_each(scx_dsq, p, c, SCX_DSQ_ITER_REV) {
			u64 waited = jiffies_to_ns(now_j - BPF_CORE_READ(p, scx.runnable_at));

			if (cc->borrowed_by) {
				if (!lent_cpu_runs(c, p))
					cc->lend_wait_since =
						chameleon_lend_wait_start(now, cc->lend_wait_since, waited);
			} else if (waited > CHAMELEON_STARVE_NS) {
				WRITE_ONCE(cc->starved_pid, p->pid);
				scx_bpf_kick_cpu(c, SCX_KICK_IDLE);
			}
			break;
		}
		bpf_rcu_read_unlock();
	}
}

/* From ops.dispatch on @cpu: run the task the guard named, if still queued here. */
static bool dispatch_starved(s32 cpu)
{
	struct cpu_ctx *cc = cpu_ctx(cpu);
	struct task_struct *p;
	s32 pid = READ_ONCE(cc->starved_pid);
	bool moved = false;

	if (!pid)
		return false;
	WRITE_ONCE(cc->starved_pid, 0);
	bpf_for_each(scx_dsq, p, cpu, SCX_DSQ_ITER_REV) {
		if (p->pid != pid)
			continue;
		moved = scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0);
		break;
	}
	if (moved)
		__sync_fetch_and_add(&nr_starved, 1);
	return moved;
}
