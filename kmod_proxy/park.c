// SPDX-License-Identifier: GPL-2.0
/*
 * Parking: bulk, deferred CPU hotplug, after Bolt.
 *
 * Taking a CPU offline costs tens of milliseconds (36-93 ms per CPU under
 * TCG), far too long for a decision the agent takes on its control path. So
 * PARK only does what must be true at once: it checks the mask, marks the
 * CPUs parked (the proxy reconciliation then keeps device interrupts off
 * them, and lend refuses them) and arms one delayed work item. After the
 * hold-off, the work item calls remove_cpu() for every CPU still parked and
 * online, one after the other with nothing in between. UNPARK of a CPU whose
 * offline has not happened yet just clears its mark (its offline never runs);
 * a CPU we really took offline is brought back by another work item calling
 * add_cpu(). Both run on the ordered chp_wq, so an online is never overtaken
 * by the offline it undoes, and hold no lock across remove_cpu() or
 * add_cpu(): STATS and the other ioctls never wait for them.
 *
 * The bulk: there is no kernel interface to take several CPUs offline at
 * once, so what a batch can share is the waiting. Most of a hotplug operation
 * on an idle machine is RCU grace periods: percpu_down_write() of the hotplug
 * locks (mem_hotplug_lock in try_online_node(), cpu_hotplug_lock in _cpu_up()
 * and _cpu_down()) waits for one in rcu_sync_enter() unless the previous
 * writer left less than a grace period ago, and sched_cpu_deactivate() waits
 * for one per CPU. Seen with the sched_switch stack trigger: a 3-CPU bulk
 * online slept in those for 62 of its 85 ms. So a batch runs with grace
 * periods expedited (rcu_expedite_gp(): IPIs instead of waiting for ticks),
 * as the kernel does around suspend and hibernation, which take every CPU
 * but one offline (rcu_pm_notify(), kernel/rcu/tree.c); only for the tens of
 * milliseconds of the batch.
 *
 * Each CPU's park state is one word, changed under chp_lock and read
 * lock-free (by the kfuncs, through chp_park_is_parked()):
 *
 *   NONE ----PARK----> PENDING ---hold-off over---> OFFLINING --done--> OFFLINED
 *    ^                  |  |                          |    |               |  |
 *    |                  |  +--offline already--> HELD <----+--failed        |  |
 *    +--UNPARK, undo----+                          |  ^--online by someone--+  |
 *    +--UNPARK, undo-------------------------------+                           |
 *    +--online--- ONLINING <---UNPARK, undo (from OFFLINING or OFFLINED)------+
 *
 * PENDING, HELD, OFFLINING and OFFLINED are parked. HELD is parked but not
 * ours to take offline or bring back: remove_cpu() failed, or someone else
 * took the CPU offline or brought it back online (sysfs) meanwhile; the
 * scheduler's request still stands. ONLINING stays set while add_cpu() fails,
 * so that the next RESET or CLAIM tries again.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "internal.h"

enum chp_park_state {
	CHP_PARK_NONE,
	CHP_PARK_PENDING,
	CHP_PARK_HELD,
	CHP_PARK_OFFLINING,
	CHP_PARK_OFFLINED,
	CHP_PARK_ONLINING,
};

struct chp_park_cpu {
	int state;		/* enum chp_park_state; under chp_lock */
	bool removing;		/* in remove_cpu() now; see chp_park_is_parked() */
	unsigned int retries;	/* remove_cpu() -EBUSY answers, this park */
	unsigned long deadline;	/* jiffies when the CPU goes offline */
	u64 t0;			/* ktime of the PARK or UNPARK call */
};

/*
 * remove_cpu() answers -EBUSY while CPU hotplug is disabled for a moment
 * (cpu_hotplug_disable(): idle_inject_stop() does it, so our own emulation
 * stopping on a representative or at release; suspend too). Tried again
 * this often, this long apart, before the CPU is HELD online.
 */
#define CHP_PARK_RETRIES	20
#define CHP_PARK_RETRY_MS	20

static DEFINE_PER_CPU(struct chp_park_cpu, chp_park_cpu);

/* Counters, under chp_lock. */
static struct {
	u64 parks;
	u64 unparks;
	u64 remove_calls;
	u64 remove_failures;
	u64 add_calls;
	u64 add_failures;
	int remove_error;
	int add_error;
	u64 park_critical_ns;
	u64 park_physical_ns;
	u64 unpark_critical_ns;
	u64 unpark_physical_ns;
} chp_park_stat;

static unsigned long chp_park_due;	/* when chp_park_work runs, if pending */

static void chp_park_work_fn(struct work_struct *work);
static void chp_unpark_work_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(chp_park_work, chp_park_work_fn);
static DECLARE_WORK(chp_unpark_work, chp_unpark_work_fn);

static int chp_state(int cpu)
{
	return READ_ONCE(per_cpu_ptr(&chp_park_cpu, cpu)->state);
}

static void chp_set_state(int cpu, int state)
{
	lockdep_assert_held(&chp_lock);
	WRITE_ONCE(per_cpu_ptr(&chp_park_cpu, cpu)->state, state);
}

static bool chp_state_parked(int state)
{
	return state != CHP_PARK_NONE && state != CHP_PARK_ONLINING;
}

/*
 * Lock-free: the kfuncs and the IRQ reconciliation. A CPU in remove_cpu()
 * counts as parked whatever its state: an UNPARK or an undo cannot stop
 * that offline (ONLINING brings the CPU back after it), and an IRQ given
 * back onto it meanwhile would have its affinity broken by the kernel, for
 * good, when the CPU goes. The park work sets the flag before it reads the
 * state it acts on, with a full barrier between, and an undo changes the
 * state before it asks for a reconciliation: either the work sees the
 * undo and never calls remove_cpu(), or the reconciliation sees the flag.
 */
bool chp_park_is_parked(int cpu)
{
	return chp_state_parked(chp_state(cpu)) ||
	       READ_ONCE(per_cpu_ptr(&chp_park_cpu, cpu)->removing);
}

/* Arms chp_park_work for @when, unless it is already due earlier. */
static void chp_park_arm(unsigned long when)
{
	unsigned long now = jiffies;

	lockdep_assert_held(&chp_lock);
	if (delayed_work_pending(&chp_park_work) &&
	    time_before_eq(chp_park_due, when))
		return;
	chp_park_due = when;
	mod_delayed_work(chp_wq, &chp_park_work,
			 time_after(when, now) ? when - now : 0);
}

/*
 * The non-critical part of PARK: offline the CPUs whose hold-off is over,
 * back to back. The IRQs are off them already: PARK asked for a
 * reconciliation, and our hotplug callback runs one before the kernel
 * migrates a dying CPU's IRQs.
 */
static void chp_park_work_fn(struct work_struct *work)
{
	unsigned long next = 0, now = jiffies;
	struct chp_park_cpu *pc;
	cpumask_var_t due;
	bool more = false;
	int cpu, ret;

	if (!zalloc_cpumask_var(&due, GFP_KERNEL)) {
		mutex_lock(&chp_lock);
		chp_park_arm(now + 1);
		mutex_unlock(&chp_lock);
		return;
	}
	mutex_lock(&chp_lock);
	for_each_possible_cpu(cpu) {
		pc = per_cpu_ptr(&chp_park_cpu, cpu);
		if (pc->state != CHP_PARK_PENDING)
			continue;
		if (time_before(now, pc->deadline)) {
			if (!more || time_before(pc->deadline, next))
				next = pc->deadline;
			more = true;
			continue;
		}
		chp_set_state(cpu, CHP_PARK_OFFLINING);
		cpumask_set_cpu(cpu, due);
	}
	if (more)
		chp_park_arm(next);
	mutex_unlock(&chp_lock);

	if (!cpumask_empty(due))
		rcu_expedite_gp();
	for_each_cpu(cpu, due) {
		pc = per_cpu_ptr(&chp_park_cpu, cpu);
		WRITE_ONCE(pc->removing, true);
		smp_mb();	/* see chp_park_is_parked() */
		/* Unparked meanwhile: not taken offline at all. */
		if (chp_state(cpu) != CHP_PARK_OFFLINING)
			ret = 1;
		else if (!cpu_online(cpu))
			ret = 1;	/* offline by someone else: not ours */
		else
			ret = remove_cpu(cpu);
		WRITE_ONCE(pc->removing, false);

		mutex_lock(&chp_lock);
		if (ret <= 0)
			chp_park_stat.remove_calls++;
		if (pc->state == CHP_PARK_OFFLINING && ret == -EBUSY &&
		    pc->retries < CHP_PARK_RETRIES) {
			/* Hotplug disabled for a moment: try again shortly. */
			pc->retries++;
			pc->deadline = jiffies + msecs_to_jiffies(CHP_PARK_RETRY_MS);
			chp_set_state(cpu, CHP_PARK_PENDING);
			chp_park_arm(pc->deadline);
			mutex_unlock(&chp_lock);
			continue;
		}
		if (ret <= 0)
			chp_park_stat.park_physical_ns = ktime_get_ns() - pc->t0;
		if (ret < 0) {
			chp_park_stat.remove_failures++;
			chp_park_stat.remove_error = ret;
			pr_info("cannot take CPU %d offline: %d\n", cpu, ret);
		}
		if (pc->state == CHP_PARK_OFFLINING) {
			/* Back online already (sysfs) is not ours either. */
			chp_set_state(cpu, ret || cpu_online(cpu) ?
				      CHP_PARK_HELD : CHP_PARK_OFFLINED);
		}
		if (pc->state == CHP_PARK_ONLINING && ret)
			chp_set_state(cpu, CHP_PARK_NONE);	/* never went */
		/* ONLINING after a done offline: chp_unpark_work is queued. */
		mutex_unlock(&chp_lock);
	}
	if (!cpumask_empty(due)) {
		rcu_unexpedite_gp();
		/* IRQs kept off a CPU that stayed, or was unparked meanwhile. */
		chp_proxy_request_reconcile();
	}
	free_cpumask_var(due);
}

/* The non-critical part of UNPARK and of an undo: our CPUs back online. */
static void chp_unpark_work_fn(struct work_struct *work)
{
	bool expedited = false;
	struct chp_park_cpu *pc;
	int cpu, ret;

	for_each_possible_cpu(cpu) {
		if (chp_state(cpu) != CHP_PARK_ONLINING)
			continue;
		if (!expedited && !cpu_online(cpu)) {
			rcu_expedite_gp();
			expedited = true;
		}
		pc = per_cpu_ptr(&chp_park_cpu, cpu);
		ret = cpu_online(cpu) ? 1 : add_cpu(cpu);

		mutex_lock(&chp_lock);
		if (ret <= 0) {
			chp_park_stat.add_calls++;
			chp_park_stat.unpark_physical_ns = ktime_get_ns() - pc->t0;
		}
		if (ret < 0) {
			chp_park_stat.add_failures++;
			chp_park_stat.add_error = ret;
			pr_warn("cannot bring CPU %d back online: %d\n", cpu, ret);
		} else if (pc->state == CHP_PARK_ONLINING) {
			chp_set_state(cpu, CHP_PARK_NONE);
		}
		mutex_unlock(&chp_lock);
	}
	if (expedited)
		rcu_unexpedite_gp();
}

static int chp_park_check(const struct cpumask *mask)
{
	bool left = false;
	int cpu;

	lockdep_assert_held(&chp_lock);
	/* The boot CPU runs things that cannot move (and often cannot go). */
	if (cpumask_test_cpu(0, mask))
		return -EINVAL;
	for_each_cpu(cpu, mask) {
		if (chp_state(cpu) != CHP_PARK_NONE || !cpu_online(cpu))
			return -EBUSY;
		if (!cpu_is_hotpluggable(cpu))
			return -EOPNOTSUPP;
	}
	for_each_online_cpu(cpu)
		if (!chp_park_is_parked(cpu) && !cpumask_test_cpu(cpu, mask))
			left = true;
	return left ? 0 : -EINVAL;
}

long chp_park(struct file *file, struct chameleon_proxy_park *arg,
	      const struct cpumask *mask)
{
	u64 t0 = ktime_get_ns();
	unsigned long deadline;
	int cpu, ret;

	if (arg->flags || memchr_inv(arg->reserved, 0, sizeof(arg->reserved)) ||
	    arg->holdoff_ms > CHAMELEON_PROXY_MAX_HOLDOFF_MS)
		return -EINVAL;

	mutex_lock(&chp_lock);
	ret = chp_park_check(mask) ?: chp_own_locked(file);
	if (ret)
		goto out;
	deadline = jiffies + msecs_to_jiffies(arg->holdoff_ms);
	for_each_cpu(cpu, mask) {
		per_cpu_ptr(&chp_park_cpu, cpu)->deadline = deadline;
		per_cpu_ptr(&chp_park_cpu, cpu)->retries = 0;
		per_cpu_ptr(&chp_park_cpu, cpu)->t0 = t0;
		chp_set_state(cpu, CHP_PARK_PENDING);
	}
	chp_proxy_request_reconcile();
	chp_park_arm(deadline);
	chp_park_stat.parks++;
	arg->critical_ns = ktime_get_ns() - t0;
	chp_park_stat.park_critical_ns = arg->critical_ns;
out:
	mutex_unlock(&chp_lock);
	return ret;
}

/*
 * Unparks @cpu, under chp_lock; returns true if it is ours to bring back
 * online (then the caller queues chp_unpark_work).
 */
static bool chp_unpark_one(int cpu, u64 t0)
{
	switch (chp_state(cpu)) {
	case CHP_PARK_OFFLINING:
	case CHP_PARK_OFFLINED:
	case CHP_PARK_ONLINING:
		per_cpu_ptr(&chp_park_cpu, cpu)->t0 = t0;
		chp_set_state(cpu, CHP_PARK_ONLINING);
		return true;
	default:
		/* Not offline yet: clearing the mark cancels its offline. */
		chp_set_state(cpu, CHP_PARK_NONE);
		return false;
	}
}

long chp_unpark(struct file *file, struct chameleon_proxy_unpark *arg,
		const struct cpumask *mask)
{
	u64 t0 = ktime_get_ns();
	bool onlining = false;
	int cpu, ret = 0;

	if (arg->flags || memchr_inv(arg->reserved, 0, sizeof(arg->reserved)))
		return -EINVAL;

	mutex_lock(&chp_lock);
	for_each_cpu(cpu, mask) {
		if (!chp_park_is_parked(cpu)) {
			ret = -EINVAL;
			goto out;
		}
	}
	ret = chp_own_locked(file);
	if (ret)
		goto out;
	for_each_cpu(cpu, mask)
		onlining |= chp_unpark_one(cpu, t0);
	/*
	 * IRQs come back now; an original affinity may name a CPU still
	 * offline: the online callback gives it back once it is online.
	 */
	chp_proxy_request_reconcile();
	if (onlining)
		queue_work(chp_wq, &chp_unpark_work);
	chp_park_stat.unparks++;
	arg->critical_ns = ktime_get_ns() - t0;
	chp_park_stat.unpark_critical_ns = arg->critical_ns;
	if (!onlining)
		chp_park_stat.unpark_physical_ns = arg->critical_ns;
out:
	mutex_unlock(&chp_lock);
	return ret;
}

/*
 * Release, RESET, CLAIM: every CPU unparked, the ones we took offline (or are
 * taking) back online by chp_unpark_work. Returns how many those are and adds
 * CHAMELEON_PROXY_FOUND_* bits to @found.
 */
u32 chp_park_undo_locked(u64 *found)
{
	u64 t0 = ktime_get_ns();
	u32 nr = 0;
	int cpu;

	lockdep_assert_held(&chp_lock);
	for_each_possible_cpu(cpu) {
		int state = chp_state(cpu);

		if (state == CHP_PARK_NONE)
			continue;
		if (chp_state_parked(state))
			*found |= CHAMELEON_PROXY_FOUND_PARKED;
		if (chp_unpark_one(cpu, t0)) {
			*found |= CHAMELEON_PROXY_FOUND_OFFLINED;
			nr++;
		}
	}
	if (nr)
		queue_work(chp_wq, &chp_unpark_work);
	return nr;
}

/* After an undo was waited for: the error of a CPU that is still not back. */
int chp_park_error(void)
{
	int cpu, ret = 0;

	mutex_lock(&chp_lock);
	for_each_possible_cpu(cpu)
		if (chp_state(cpu) == CHP_PARK_ONLINING)
			ret = chp_park_stat.add_error ?: -EIO;
	mutex_unlock(&chp_lock);
	return ret;
}

/*
 * CPU hotplug callback (main.c): a CPU we took offline that someone else
 * brought back is no longer ours; it stays parked.
 */
void chp_park_cpu_online(unsigned int cpu)
{
	mutex_lock(&chp_lock);
	if (chp_state(cpu) == CHP_PARK_OFFLINED)
		chp_set_state(cpu, CHP_PARK_HELD);
	mutex_unlock(&chp_lock);
}

void chp_park_stats(struct chameleon_proxy_stats *st)
{
	mutex_lock(&chp_lock);
	st->parks = chp_park_stat.parks;
	st->unparks = chp_park_stat.unparks;
	st->remove_cpu_calls = chp_park_stat.remove_calls;
	st->remove_cpu_failures = chp_park_stat.remove_failures;
	st->remove_cpu_last_error = chp_park_stat.remove_error;
	st->add_cpu_calls = chp_park_stat.add_calls;
	st->add_cpu_failures = chp_park_stat.add_failures;
	st->add_cpu_last_error = chp_park_stat.add_error;
	st->park_critical_ns = chp_park_stat.park_critical_ns;
	st->park_physical_ns = chp_park_stat.park_physical_ns;
	st->unpark_critical_ns = chp_park_stat.unpark_critical_ns;
	st->unpark_physical_ns = chp_park_stat.unpark_physical_ns;
	mutex_unlock(&chp_lock);
}

void chp_park_cpu_stats(int cpu, struct chameleon_proxy_cpu_stats *cs)
{
	int state = chp_state(cpu);

	if (cpu_online(cpu))
		cs->flags |= CHAMELEON_PROXY_CPU_ONLINE;
	if (chp_state_parked(state))
		cs->flags |= CHAMELEON_PROXY_CPU_PARKED;
	if (state == CHP_PARK_PENDING)
		cs->flags |= CHAMELEON_PROXY_CPU_PENDING;
	if ((state == CHP_PARK_OFFLINING || state == CHP_PARK_OFFLINED ||
	     state == CHP_PARK_ONLINING) && !cpu_online(cpu))
		cs->flags |= CHAMELEON_PROXY_CPU_OFFLINED;
}

int chp_park_init(void)
{
	return 0;
}

/* Module exit: no worker may run after this. */
void chp_park_quiesce(void)
{
	cancel_delayed_work_sync(&chp_park_work);
	flush_work(&chp_unpark_work);
}

/* Module exit, after the quiesce: what a cleanup could not bring back. */
void chp_park_exit_online(void)
{
	u64 found = 0;

	mutex_lock(&chp_lock);
	chp_park_undo_locked(&found);
	mutex_unlock(&chp_lock);
	flush_work(&chp_unpark_work);
}

void chp_park_exit(void)
{
	int cpu;

	for_each_possible_cpu(cpu)
		if (chp_state(cpu) == CHP_PARK_ONLINING)
			pr_warn("CPU %d stays offline\n", cpu);
}
