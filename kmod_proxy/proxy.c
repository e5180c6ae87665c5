// SPDX-License-Identifier: GPL-2.0
/*
 * Processor proxies.
 *
 * When the scheduler lends a CPU to a representative, that CPU should stop
 * taking device interrupts: they are routed to the rest of the IRQ's affinity,
 * or, when nothing of it is left, to the representative, which stands in for
 * the lent CPU (hence "proxy"). The interruptions the lent CPU still sees
 * (IPIs, its timer, softirqs, IRQs that cannot move) are counted, so the agent
 * can tell what lending costs.
 *
 * The work is split in two:
 *
 *  - chp_proxy_lend() and chp_proxy_reclaim() run from the BPF scheduler with
 *    a runqueue lock held. They update the lent CPU's state under its raw
 *    spinlock, snapshot or accumulate its counters and raise an irq_work,
 *    nothing more: no sleeping, no allocation, no wakeup.
 *
 *  - chp_proxy_reconcile() runs in process context under chp_irq_mutex,
 *    from a work item (queued by the irq_work, or by an ioctl) or from a CPU
 *    hotplug callback. It reads the current set of lent and parked CPUs and makes every
 *    movable IRQ's affinity agree with it: moved off those CPUs if its
 *    affinity meets them, given its original affinity back once it no longer
 *    does. It looks at the state only, never at the events that led to it, so
 *    it can run any number of times; a lend reclaimed before it runs leaves
 *    no trace.
 *
 * Each lend and reclaim is timed from its kfunc call to the end of the
 * reconciliation that applied it, for latency.c (debugfs); one that needed no
 * reconciliation (reclaimed, or lent again, before any ran) is counted there.
 *
 * The original affinity of every IRQ we moved is kept in chp_saved, keyed by
 * IRQ number. If someone else (irqbalance, an administrator) changes the
 * affinity of such an IRQ meanwhile, their choice wins: we forget ours. Each
 * set is made only if the affinity still reads as what it was decided from
 * (chp_set_if_unchanged()); a change seen there is left alone and judged by
 * the next reconciliation.
 *
 * CPU hotplug: the kernel breaks the affinity of an IRQ whose mask has no
 * online CPU left when a CPU goes, to all CPUs, for good; that would be taken
 * for someone else's choice and the original lost. So for the IRQs we moved
 * only active CPUs count as up, and the teardown callback reconciles before
 * the kernel migrates the dying CPU's IRQs: an IRQ we moved onto it goes
 * elsewhere, and one whose original has no CPU up stays where we put it until
 * the online callback finds a CPU of its original back.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/interrupt.h>
#include <linux/irq.h>
#include <linux/irqdesc.h>
#include <linux/irq_work.h>
#include <linux/irqnr.h>
#include <linux/kernel_stat.h>
#include <linux/ktime.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "internal.h"

/* Raw interruption counters of one CPU, as the kernel keeps them. */
struct chp_counts {
	unsigned long irqs;
	u32 softirqs;
	u32 ipis;
	u32 timers;
};

/* Interruptions counted over some time. */
struct chp_intr {
	u64 irqs;
	u64 softirqs;
	u64 ipis;
	u64 timers;
};

/*
 * Lending state of one CPU. Written by the kfuncs of any CPU, so each CPU's
 * state has its own cache line. @lock is a leaf lock taken with interrupts
 * off (the kfuncs may run in hard interrupt context, e.g. from ops.tick).
 */
struct chp_proxy_cpu {
	raw_spinlock_t lock;
	s32 proxied_by;		/* representative, or -1; READ_ONCE() outside */
	bool redirect_pending;	/* lent, not yet seen by a reconciliation */
	u64 lend_ns;		/* kfunc time of that lend, 0 if none */
	u64 reclaim_ns;		/* of a reclaim whose IRQs are not back yet */
	struct chp_counts snap;	/* counters when the current lend started */
	struct chp_intr total;	/* counted over the finished lends */
	cpumask_var_t proxying_for; /* CPUs lent to this one; atomic bitops */
	/* Under chp_irq_mutex: lend_ns, reclaim_ns as the reconciliation took them */
	u64 applying_lend_ns;
	u64 applying_reclaim_ns;
};

static DEFINE_PER_CPU_SHARED_ALIGNED(struct chp_proxy_cpu, chp_proxy_cpu);

/* Counters the kfuncs update, lock-free. */
static atomic64_t chp_lends, chp_lends_refused;
static atomic64_t chp_reclaims, chp_reclaims_refused, chp_skipped;

/* Counters of the reconciliation, written under chp_irq_mutex. */
static atomic64_t chp_redirects, chp_restores, chp_irq_failures, chp_managed;
static atomic_t chp_irq_last_error;
static atomic_t chp_nr_moved;	/* saved entries that are not managed */

/*
 * An IRQ whose affinity we changed (or, with @managed, a kernel-managed IRQ
 * on a lent CPU that we counted once and left alone). Two cpumasks follow:
 * the original affinity and the one we set, empty until set.
 */
struct chp_saved_irq {
	bool managed;
	unsigned long masks[];
};

/* The saved IRQs and the reconciliation's scratch masks. */
static DEFINE_MUTEX(chp_irq_mutex);
static DEFINE_XARRAY(chp_saved);
static cpumask_var_t chp_excl, chp_gone_excl, chp_up, chp_cur, chp_target;
static cpumask_var_t chp_check;

static struct cpumask *chp_saved_orig(struct chp_saved_irq *s)
{
	return to_cpumask(s->masks);
}

static struct cpumask *chp_saved_set(struct chp_saved_irq *s)
{
	return to_cpumask(s->masks + cpumask_size() / sizeof(long));
}

static void chp_read_counts(int cpu, struct chp_counts *c)
{
	c->irqs = kstat_cpu_irqs_sum(cpu);
	c->softirqs = kstat_cpu_softirqs_sum(cpu);
#if defined(CONFIG_X86_LOCAL_APIC) && defined(CONFIG_SMP)
#ifndef CHP_IRQ_STAT_FIELDS
	{
		const unsigned int *n = per_cpu_ptr(&irq_stat, cpu)->counts;

		c->ipis = READ_ONCE(n[IRQ_COUNT_CALL_FUNCTION]) +
			  READ_ONCE(n[IRQ_COUNT_RESCHEDULE]) +
			  READ_ONCE(n[IRQ_COUNT_TLB]);
		c->timers = READ_ONCE(n[IRQ_COUNT_APIC_TIMER]);
	}
#else
	/* Before 7.2 irq_cpustat_t has one named field per counter (Kbuild). */
	{
		const irq_cpustat_t *s = per_cpu_ptr(&irq_stat, cpu);

		c->ipis = READ_ONCE(s->irq_call_count) +
			  READ_ONCE(s->irq_resched_count) +
			  READ_ONCE(s->irq_tlb_count);
		c->timers = READ_ONCE(s->apic_timer_irqs);
	}
#endif
#else
	c->ipis = 0;
	c->timers = 0;
#endif
}

/* Interruptions since @snap; the 32-bit counters wrap, hence the casts. */
static void chp_counts_since(int cpu, const struct chp_counts *snap,
			     struct chp_intr *d)
{
	struct chp_counts now;

	chp_read_counts(cpu, &now);
	d->irqs = now.irqs - snap->irqs;
	d->softirqs = (u32)(now.softirqs - snap->softirqs);
	d->ipis = (u32)(now.ipis - snap->ipis);
	d->timers = (u32)(now.timers - snap->timers);
}

static void chp_proxy_work_fn(struct work_struct *work)
{
	chp_proxy_reconcile();
}

static DECLARE_WORK(chp_proxy_work, chp_proxy_work_fn);

/*
 * The CPU to run the deferred work on (chp_fast_wq is bound). Any CPU neither
 * lent nor a representative runs it at once; when every online CPU is in an
 * object, the local CPU's kworker, which the scheduler lets run on a
 * representative or a lent CPU without a split (an unbound kworker would wait
 * for one: with an object of all 4 CPUs, more lends were reclaimed before
 * their IRQs moved than applied). The walk is over CPUs' lending state only,
 * once per deferred burst.
 */
int chp_fast_cpu(void)
{
	int cpu;

	for_each_online_cpu(cpu) {
		struct chp_proxy_cpu *pc = per_cpu_ptr(&chp_proxy_cpu, cpu);

		if (READ_ONCE(pc->proxied_by) < 0 && cpumask_empty(pc->proxying_for))
			return cpu;
	}
	return raw_smp_processor_id();
}

/*
 * Hard interrupt context, after the kfunc's caller dropped the runqueue lock
 * (it is held with interrupts off, so the irq_work cannot run before): waking
 * a kworker from here takes runqueue locks safely.
 */
static void chp_proxy_irq_work_fn(struct irq_work *iw)
{
	queue_work_on(chp_fast_cpu(), chp_fast_wq, &chp_proxy_work);
}

static DEFINE_IRQ_WORK(chp_proxy_irq_work, chp_proxy_irq_work_fn);

/* Process context only: ask for a reconciliation without waiting for it. */
void chp_proxy_request_reconcile(void)
{
	queue_work_on(chp_fast_cpu(), chp_fast_wq, &chp_proxy_work);
}

/* Waits for the reconciliations asked for so far. */
void chp_proxy_flush(void)
{
	irq_work_sync(&chp_proxy_irq_work);
	flush_work(&chp_proxy_work);
}

/*
 * kfunc context: see the top comment. @gen: the owner generation the calling
 * program was loaded under (chp_owner_admits()).
 */
int chp_proxy_lend(s32 cpu, s32 rep, u64 gen)
{
	u64 now = ktime_get_ns();
	struct chp_proxy_cpu *pc;
	unsigned long flags;
	bool unrestored = false;
	int ret = 0;

	if (!chp_cpu_valid(cpu) || !chp_cpu_valid(rep) || cpu == rep) {
		ret = -EINVAL;
		goto refused;
	}
	if (!cpu_online(cpu) || !cpu_online(rep) || chp_park_is_parked(cpu)) {
		ret = -EBUSY;
		goto refused;
	}
	pc = per_cpu_ptr(&chp_proxy_cpu, cpu);
	raw_spin_lock_irqsave(&pc->lock, flags);
	/*
	 * Not loaded under the current owner, or no owner: the agent that
	 * loaded the caller is gone (its scheduler on its way out, or a
	 * program that outlived it), whoever owns the module now. Checked
	 * under the lock: a release ends the owner's generation and then ends
	 * every lend under each CPU's lock, so a lend is either refused here
	 * or seen and ended there.
	 */
	if (!chp_owner_admits(gen)) {
		ret = -ENODEV;
	} else if (pc->proxied_by >= 0) {
		ret = -EBUSY;
	} else {
		chp_read_counts(cpu, &pc->snap);
		pc->redirect_pending = true;
		pc->lend_ns = now;
		/* Lent again before its IRQs came back: they stay away. */
		unrestored = pc->reclaim_ns != 0;
		pc->reclaim_ns = 0;
		WRITE_ONCE(pc->proxied_by, rep);
		cpumask_set_cpu(cpu, per_cpu_ptr(&chp_proxy_cpu, rep)->proxying_for);
	}
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	if (ret)
		goto refused;
	if (unrestored)
		chp_latency_skipped(CHP_LAT_RECLAIM);
	atomic64_inc(&chp_lends);
	irq_work_queue(&chp_proxy_irq_work);
	return 0;
refused:
	atomic64_inc(&chp_lends_refused);
	return ret;
}

/*
 * Ends the lend of @pc's CPU, under pc->lock. Returns true if a
 * reconciliation had moved IRQs for it (so they must come back), false if
 * none had run yet: then nothing was moved for this lend.
 */
static bool chp_end_lend(int cpu, struct chp_proxy_cpu *pc)
{
	struct chp_intr d;
	bool seen = !pc->redirect_pending;

	chp_counts_since(cpu, &pc->snap, &d);
	pc->total.irqs += d.irqs;
	pc->total.softirqs += d.softirqs;
	pc->total.ipis += d.ipis;
	pc->total.timers += d.timers;
	cpumask_clear_cpu(cpu, per_cpu_ptr(&chp_proxy_cpu,
					   pc->proxied_by)->proxying_for);
	WRITE_ONCE(pc->proxied_by, -1);
	pc->redirect_pending = false;
	pc->lend_ns = 0;
	atomic64_inc(&chp_reclaims);
	if (!seen)
		atomic64_inc(&chp_skipped);
	return seen;
}

/* kfunc context: see the top comment and chp_proxy_lend(). */
int chp_proxy_reclaim(s32 cpu, u64 gen)
{
	u64 now = ktime_get_ns();
	struct chp_proxy_cpu *pc;
	unsigned long flags;
	bool seen = false;
	int ret = 0;

	if (!chp_cpu_valid(cpu)) {
		atomic64_inc(&chp_reclaims_refused);
		return -EINVAL;
	}
	pc = per_cpu_ptr(&chp_proxy_cpu, cpu);
	raw_spin_lock_irqsave(&pc->lock, flags);
	/* A lend of the current owner's is none of an older program's. */
	if (!chp_owner_admits(gen)) {
		ret = -ENODEV;
	} else if (pc->proxied_by < 0) {
		ret = -ENOENT;
	} else {
		seen = chp_end_lend(cpu, pc);
		if (seen)
			pc->reclaim_ns = now;
	}
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	if (ret)
		atomic64_inc(&chp_reclaims_refused);
	else if (seen)
		irq_work_queue(&chp_proxy_irq_work);
	else
		chp_latency_skipped(CHP_LAT_LEND);
	return ret;
}

/*
 * The CPUs device interrupts must avoid now: lent and parked ones. The lends
 * and reclaims not applied yet are taken over, to be timed once applied.
 */
static void chp_build_excluded(struct cpumask *excl)
{
	unsigned long flags;
	int cpu;

	cpumask_clear(excl);
	for_each_possible_cpu(cpu) {
		struct chp_proxy_cpu *pc = per_cpu_ptr(&chp_proxy_cpu, cpu);

		if (chp_park_is_parked(cpu))
			cpumask_set_cpu(cpu, excl);
		raw_spin_lock_irqsave(&pc->lock, flags);
		if (pc->proxied_by >= 0) {
			cpumask_set_cpu(cpu, excl);
			pc->redirect_pending = false;
		}
		pc->applying_lend_ns = pc->lend_ns;
		pc->applying_reclaim_ns = pc->reclaim_ns;
		pc->lend_ns = 0;
		pc->reclaim_ns = 0;
		raw_spin_unlock_irqrestore(&pc->lock, flags);
	}
}

/* The lends and reclaims chp_build_excluded() took over are applied now. */
static void chp_report_applied(void)
{
	u64 now = ktime_get_ns();
	int cpu;

	for_each_possible_cpu(cpu) {
		struct chp_proxy_cpu *pc = per_cpu_ptr(&chp_proxy_cpu, cpu);

		if (pc->applying_lend_ns)
			chp_latency_record(CHP_LAT_LEND, cpu,
					   pc->applying_lend_ns, now);
		if (pc->applying_reclaim_ns)
			chp_latency_record(CHP_LAT_RECLAIM, cpu,
					   pc->applying_reclaim_ns, now);
		pc->applying_lend_ns = 0;
		pc->applying_reclaim_ns = 0;
	}
}

static bool chp_can_set_affinity(unsigned int irq, struct irq_data *d)
{
#ifndef CHP_NO_IRQ_CAN_SET_AFFINITY
	return irq_can_set_affinity(irq);
#else
	/* Not exported before 7.3 (Kbuild): the same test on the IRQ's data. */
	return irqd_can_balance(d) && d->chip && d->chip->irq_set_affinity;
#endif
}

/*
 * Copies the affinity of @irq if it is one we may move: it has a handler, is
 * not per-CPU and its chip can change its affinity (not IRQF_NOBALANCING).
 * The affinity it is going to: an IO-APIC IRQ takes a new one only at its
 * next interrupt, and until then its affinity mask still shows the old one
 * (as /proc/irq/N/smp_affinity does not: it shows the pending one). Read as
 * the old, a restore still pending when its CPU was lent again looked like
 * an IRQ already off that CPU, and landed there at the next interrupt for
 * good (proxy_module: an unpark and a park between two interrupts).
 */
static bool chp_read_irq(unsigned int irq, struct cpumask *aff, bool *managed)
{
	struct irq_desc *desc;
	struct irq_data *d;
	unsigned long flags;
	bool ok;

	/* Sparse IRQ descriptors are freed after an RCU grace period. */
	rcu_read_lock();
	d = irq_get_irq_data(irq);
	ok = d && irq_has_action(irq) && !irqd_is_per_cpu(d) &&
	     chp_can_set_affinity(irq, d);
	if (ok) {
		desc = irq_data_to_desc(d);
		raw_spin_lock_irqsave(&desc->lock, flags);
		*managed = irqd_affinity_is_managed(d);
#ifdef CONFIG_GENERIC_PENDING_IRQ
		if (irqd_is_setaffinity_pending(d))
			cpumask_copy(aff, desc->pending_mask);
		else
#endif
			cpumask_copy(aff, irq_data_get_affinity_mask(d));
		raw_spin_unlock_irqrestore(&desc->lock, flags);
	}
	rcu_read_unlock();
	return ok;
}

/*
 * Sets @irq's affinity to @mask if it still reads as @seen, what the caller
 * decided from: 0, -EAGAIN if it changed since (someone else's choice: not
 * overwritten), or irq_set_affinity()'s error. Under chp_irq_mutex.
 *
 * The check and the set are two holds of the descriptor's lock:
 * irq_set_affinity() takes it itself, and no exported call sets an affinity
 * under a lock its caller holds. So interrupts stay off on this CPU from
 * the check to the set, and nothing sleeps or allocates in between (the
 * caller allocated first): no preemption, no other work here. A write to
 * /proc/irq/N/smp_affinity from another CPU that takes the lock in that gap
 * (or was already waiting for it while we checked) is still overwritten; it
 * is the narrowest this can be made from a module.
 */
static int chp_set_if_unchanged(unsigned int irq, const struct cpumask *seen,
				const struct cpumask *mask)
{
	unsigned long flags;
	bool managed = false;
	int ret = -EAGAIN;

	local_irq_save(flags);
	if (chp_read_irq(irq, chp_check, &managed) && !managed &&
	    cpumask_equal(chp_check, seen))
		ret = irq_set_affinity(irq, mask);
	local_irq_restore(flags);
	return ret;
}

static void chp_irq_error(int err)
{
	atomic64_inc(&chp_irq_failures);
	atomic_set(&chp_irq_last_error, err);
}

static struct chp_saved_irq *chp_remember(unsigned int irq,
					  const struct cpumask *orig,
					  bool managed)
{
	struct chp_saved_irq *s;

	s = kzalloc(sizeof(*s) + 2 * cpumask_size(), GFP_KERNEL);
	if (!s)
		return NULL;
	s->managed = managed;
	cpumask_copy(chp_saved_orig(s), orig);
	if (xa_is_err(xa_store(&chp_saved, irq, s, GFP_KERNEL))) {
		kfree(s);
		return NULL;
	}
	if (!managed)
		atomic_inc(&chp_nr_moved);
	return s;
}

static void chp_forget(unsigned int irq, struct chp_saved_irq *s)
{
	if (!s)
		return;
	if (!s->managed)
		atomic_dec(&chp_nr_moved);
	kfree(xa_erase(&chp_saved, irq));
}

/*
 * Where an IRQ whose affinity is @orig should go: @orig less the excluded
 * CPUs if some of them are up (chp_up: online and not going), else the
 * representative of the first lent CPU of @orig, else any CPU up, neither
 * lent nor parked.
 */
static bool chp_pick_target(const struct cpumask *orig,
			    const struct cpumask *excl, struct cpumask *target)
{
	unsigned int cpu;
	s32 rep;

	cpumask_andnot(target, orig, excl);
	if (cpumask_intersects(target, chp_up))
		return true;
	cpumask_clear(target);
	for_each_cpu_and(cpu, orig, excl) {
		rep = READ_ONCE(per_cpu_ptr(&chp_proxy_cpu, cpu)->proxied_by);
		if (rep < 0)
			continue;	/* parked, not lent */
		if (cpumask_test_cpu(rep, chp_up) && !cpumask_test_cpu(rep, excl)) {
			cpumask_set_cpu(rep, target);
			return true;
		}
		break;
	}
	cpu = cpumask_first_andnot(chp_up, excl);
	if (cpu >= nr_cpu_ids)
		return false;
	cpumask_set_cpu(cpu, target);
	return true;
}

/*
 * @excl: the lent and parked CPUs; @gone_excl: those and a CPU going offline.
 * Only the IRQs we moved are kept off a dying CPU: the others are the kernel's
 * to migrate, as they would be without us.
 */
static void chp_reconcile_irq(unsigned int irq, const struct cpumask *excl,
			      const struct cpumask *gone_excl)
{
	struct chp_saved_irq *s = xa_load(&chp_saved, irq);
	const struct cpumask *orig;
	bool managed = false;
	int ret;

	if (!chp_read_irq(irq, chp_cur, &managed)) {
		/* Freed or made unmovable: nothing left to give back. */
		chp_forget(irq, s);
		return;
	}
	/*
	 * Ours while it reads as we set it; set back to the original (by
	 * someone else) it is still ours to move. Anything else was set by
	 * someone else, whose choice becomes the original.
	 */
	if (s && (s->managed != managed ||
		  (!managed && !cpumask_equal(chp_cur, chp_saved_set(s)) &&
		   !cpumask_equal(chp_cur, chp_saved_orig(s))))) {
		chp_forget(irq, s);
		s = NULL;
	}
	orig = s && !managed ? chp_saved_orig(s) : chp_cur;
	if (s && !managed)
		excl = gone_excl;

	if (!cpumask_intersects(orig, excl)) {
		if (!s || managed) {
			chp_forget(irq, s);
			return;
		}
		if (cpumask_intersects(orig, chp_up)) {
			ret = chp_set_if_unchanged(irq, chp_cur, orig);
			if (ret == -EAGAIN) {
				/* Changed since it was read: judged again. */
				chp_proxy_request_reconcile();
				return;
			}
			if (ret) {
				/* Kept: the next reconciliation tries again. */
				chp_irq_error(ret);
				return;
			}
			atomic64_inc(&chp_restores);
			chp_forget(irq, s);
			return;
		}
		/*
		 * No CPU of the original is up: setting it would fail, or the
		 * kernel would break it at once. Kept where we put it while
		 * that CPU stays up, and given back once one of the original's
		 * is up again.
		 */
		if (cpumask_intersects(chp_cur, chp_up) &&
		    !cpumask_intersects(chp_cur, excl))
			return;
	}

	if (managed) {
		/* The kernel owns these: count each once while it applies. */
		if (!s && chp_remember(irq, chp_cur, true))
			atomic64_inc(&chp_managed);
		return;
	}

	if (!chp_pick_target(orig, excl, chp_target))
		return;
	/* Already there; one set back to the original goes again. */
	if (s && cpumask_equal(chp_cur, chp_target))
		return;
	if (!s) {
		s = chp_remember(irq, chp_cur, false);
		if (!s) {
			chp_irq_error(-ENOMEM);
			return;
		}
	}
	ret = chp_set_if_unchanged(irq, chp_cur, chp_target);
	if (ret) {
		if (ret == -EAGAIN)	/* changed since it was read */
			chp_proxy_request_reconcile();
		else
			chp_irq_error(ret);
		/* Never moved: nothing to restore. */
		if (cpumask_empty(chp_saved_set(s)))
			chp_forget(irq, s);
		return;
	}
	cpumask_copy(chp_saved_set(s), chp_target);
	atomic64_inc(&chp_redirects);
}

/*
 * Makes every movable IRQ's affinity agree with the lent and parked CPUs.
 * @coming: a CPU coming online (the hotplug online callback runs before it is
 * active), or -1. The CPUs "up" are the active ones: a CPU going offline
 * leaves the active mask first (sched_cpu_deactivate()), before the kernel
 * migrates its IRQs, so from then on no IRQ we moved is restored onto it or
 * left there.
 */
static void chp_reconcile_all(int coming)
{
	unsigned int irq, nr = irq_get_nr_irqs();
	struct chp_saved_irq *s;
	unsigned long idx;

	mutex_lock(&chp_irq_mutex);
	chp_build_excluded(chp_excl);
	cpumask_and(chp_up, cpu_active_mask, cpu_online_mask);
	if (coming >= 0)
		cpumask_set_cpu(coming, chp_up);
	/* Online but not up: going, for the IRQs we moved. */
	cpumask_andnot(chp_gone_excl, cpu_online_mask, chp_up);
	cpumask_or(chp_gone_excl, chp_gone_excl, chp_excl);
	for (irq = 0; irq < nr; irq++) {
		chp_reconcile_irq(irq, chp_excl, chp_gone_excl);
		cond_resched();
	}
	/* IRQ numbers gone since (nr_irqs shrank): nothing to give back. */
	xa_for_each_start(&chp_saved, idx, s, nr)
		chp_forget(idx, s);
	chp_report_applied();
	mutex_unlock(&chp_irq_mutex);
}

void chp_proxy_reconcile(void)
{
	chp_reconcile_all(-1);
}

/* The CPU hotplug callbacks (main.c): @cpu comes online, or goes. */
void chp_proxy_reconcile_hotplug(unsigned int cpu, bool coming)
{
	chp_reconcile_all(coming ? cpu : -1);
}

/*
 * Release, RESET, CLAIM: every lent CPU comes back (the caller asks for the
 * reconciliation that gives their IRQs back). Returns true if one was lent.
 */
bool chp_proxy_end_lends(void)
{
	unsigned long flags;
	bool any = false;
	int cpu;

	for_each_possible_cpu(cpu) {
		struct chp_proxy_cpu *pc = per_cpu_ptr(&chp_proxy_cpu, cpu);

		raw_spin_lock_irqsave(&pc->lock, flags);
		if (pc->proxied_by >= 0) {
			chp_end_lend(cpu, pc);
			any = true;
		}
		raw_spin_unlock_irqrestore(&pc->lock, flags);
	}
	return any;
}

/* IRQs away from their original affinity now. */
u32 chp_proxy_nr_moved(void)
{
	return atomic_read(&chp_nr_moved);
}

void chp_proxy_stats(struct chameleon_proxy_stats *st)
{
	st->lends = atomic64_read(&chp_lends);
	st->lends_refused = atomic64_read(&chp_lends_refused);
	st->reclaims = atomic64_read(&chp_reclaims);
	st->reclaims_refused = atomic64_read(&chp_reclaims_refused);
	st->redirects_skipped = atomic64_read(&chp_skipped);
	st->redirects_applied = atomic64_read(&chp_redirects);
	st->restores = atomic64_read(&chp_restores);
	st->irq_failures = atomic64_read(&chp_irq_failures);
	st->irq_last_error = atomic_read(&chp_irq_last_error);
	st->managed_skipped = atomic64_read(&chp_managed);
	st->irqs_moved = atomic_read(&chp_nr_moved);
}

void chp_proxy_cpu_stats(int cpu, struct chameleon_proxy_cpu_stats *cs)
{
	struct chp_proxy_cpu *pc = per_cpu_ptr(&chp_proxy_cpu, cpu);
	struct chp_intr live = {};
	unsigned long flags;

	raw_spin_lock_irqsave(&pc->lock, flags);
	cs->proxied_by = pc->proxied_by;
	if (pc->proxied_by >= 0)
		chp_counts_since(cpu, &pc->snap, &live);
	cs->irqs = pc->total.irqs;
	cs->softirqs = pc->total.softirqs;
	cs->ipis = pc->total.ipis;
	cs->timers = pc->total.timers;
	raw_spin_unlock_irqrestore(&pc->lock, flags);
	cs->live_irqs = live.irqs;
	cs->live_softirqs = live.softirqs;
	cs->live_ipis = live.ipis;
	cs->live_timers = live.timers;
	cs->nr_proxying = cpumask_weight(pc->proxying_for);
}

static void chp_proxy_free(void)
{
	struct chp_saved_irq *s;
	unsigned long idx;
	int cpu;

	xa_for_each(&chp_saved, idx, s) {
		if (!s->managed)
			pr_warn("IRQ %lu keeps affinity %*pbl, was %*pbl\n", idx,
				cpumask_pr_args(chp_saved_set(s)),
				cpumask_pr_args(chp_saved_orig(s)));
		kfree(s);
	}
	xa_destroy(&chp_saved);
	for_each_possible_cpu(cpu)
		free_cpumask_var(per_cpu_ptr(&chp_proxy_cpu, cpu)->proxying_for);
	free_cpumask_var(chp_excl);
	free_cpumask_var(chp_gone_excl);
	free_cpumask_var(chp_up);
	free_cpumask_var(chp_cur);
	free_cpumask_var(chp_target);
	free_cpumask_var(chp_check);
}

int chp_proxy_init(void)
{
	int cpu;

	for_each_possible_cpu(cpu) {
		struct chp_proxy_cpu *pc = per_cpu_ptr(&chp_proxy_cpu, cpu);

		raw_spin_lock_init(&pc->lock);
		pc->proxied_by = -1;
		if (!zalloc_cpumask_var(&pc->proxying_for, GFP_KERNEL))
			goto nomem;
	}
	if (!zalloc_cpumask_var(&chp_excl, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&chp_up, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&chp_gone_excl, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&chp_cur, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&chp_target, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&chp_check, GFP_KERNEL))
		goto nomem;
	return 0;
nomem:
	chp_proxy_free();
	return -ENOMEM;
}

/*
 * Module exit, before the final reset: no kfunc can run any more (a loaded BPF
 * program that calls them pins the module), but the irq_work and the work item
 * the last calls raised may still be in flight.
 */
void chp_proxy_quiesce(void)
{
	chp_proxy_flush();
}

/* Module exit, after the final reset restored every IRQ it could. */
void chp_proxy_exit(void)
{
	chp_proxy_free();
}
