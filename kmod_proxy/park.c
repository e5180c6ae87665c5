// SPDX-License-Identifier: GPL-2.0
/*
 * Parking: bulk, deferred CPU hotplug, after Bolt.
 *
 * Taking a CPU offline costs tens of milliseconds (36-93 ms per CPU under
 * TCG), far too long for a decision the agent takes on its control path. So
 * PARK only does what must be true at once, under chp_mutex: it checks the
 * mask, marks the CPUs parked (the proxy reconciliation then keeps device
 * interrupts off them, and lend refuses them) and arms one delayed work item.
 * After the hold-off, the work item calls remove_cpu() for every CPU still
 * parked and online. UNPARK of a CPU whose offline has not happened yet just
 * clears its marks (its offline never runs); a CPU we really took offline is
 * brought back by another work item calling add_cpu().
 *
 * remove_cpu() and add_cpu() take the device and CPU hotplug locks
 * themselves, so we call them holding chp_mutex only. That is safe because
 * nothing in the hotplug path takes chp_mutex: the module's only hotplug
 * callback (emulate.c) just queues a work item.
 *
 * Someone else may take a CPU offline or online through sysfs meanwhile: a
 * parked CPU already offline is left alone and not counted as ours, a CPU we
 * offlined that is already back online is simply no longer ours.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/percpu.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "internal.h"

/* Masks, under chp_mutex; chp_parked is also read lock-free by the kfuncs. */
static cpumask_var_t chp_parked;	/* parked: no IRQs, offline soon */
static cpumask_var_t chp_pending;	/* parked, remove_cpu() not yet due */
static cpumask_var_t chp_offlined;	/* taken offline by us */
static cpumask_var_t chp_onlining;	/* unparked, add_cpu() to do */

struct chp_park_cpu {
	unsigned long deadline;	/* jiffies when the CPU goes offline */
	u64 t0;			/* ktime of the PARK or UNPARK call */
};

static DEFINE_PER_CPU(struct chp_park_cpu, chp_park_cpu);

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

bool chp_park_is_parked(int cpu)
{
	return cpumask_test_cpu(cpu, chp_parked);
}

const struct cpumask *chp_park_mask(void)
{
	lockdep_assert_held(&chp_mutex);
	return chp_parked;
}

/* Arms chp_park_work for @when, unless it is already due earlier. */
static void chp_park_arm(unsigned long when)
{
	unsigned long now = jiffies;

	if (delayed_work_pending(&chp_park_work) &&
	    time_before_eq(chp_park_due, when))
		return;
	chp_park_due = when;
	mod_delayed_work(system_unbound_wq, &chp_park_work,
			 time_after(when, now) ? when - now : 0);
}

static void chp_offline(int cpu)
{
	int ret;

	if (!cpu_online(cpu))
		return;		/* taken offline by someone else: not ours */
	chp_park_stat.remove_calls++;
	ret = remove_cpu(cpu);
	chp_park_stat.park_physical_ns =
		ktime_get_ns() - per_cpu_ptr(&chp_park_cpu, cpu)->t0;
	if (ret < 0) {
		chp_park_stat.remove_failures++;
		chp_park_stat.remove_error = ret;
		pr_info("cannot take CPU %d offline: %d\n", cpu, ret);
		return;
	}
	/* A positive value means it was offline already. */
	if (ret == 0)
		cpumask_set_cpu(cpu, chp_offlined);
}

static int chp_online(int cpu)
{
	int ret;

	if (!cpu_online(cpu)) {
		chp_park_stat.add_calls++;
		ret = add_cpu(cpu);
		if (ret < 0) {
			chp_park_stat.add_failures++;
			chp_park_stat.add_error = ret;
			pr_warn("cannot bring CPU %d back online: %d\n", cpu, ret);
			return ret;
		}
	}
	/* Online again, by us or by someone else: no longer ours. */
	cpumask_clear_cpu(cpu, chp_offlined);
	return 0;
}

/* The non-critical part of PARK: offline the CPUs whose hold-off is over. */
static void chp_park_work_fn(struct work_struct *work)
{
	unsigned long next = 0;
	bool more = false;
	int cpu;

	mutex_lock(&chp_mutex);
	/*
	 * Move the IRQs first: if the kernel found one whose affinity has no
	 * online CPU left, it would widen it to all CPUs for good.
	 */
	if (!cpumask_empty(chp_pending))
		chp_proxy_reconcile_locked();
	for_each_cpu(cpu, chp_pending) {
		unsigned long deadline = per_cpu_ptr(&chp_park_cpu, cpu)->deadline;

		if (time_before(jiffies, deadline)) {
			if (!more || time_before(deadline, next))
				next = deadline;
			more = true;
			continue;
		}
		cpumask_clear_cpu(cpu, chp_pending);
		chp_offline(cpu);
	}
	if (more)
		chp_park_arm(next);
	mutex_unlock(&chp_mutex);
}

static void chp_unpark_work_fn(struct work_struct *work)
{
	int cpu;

	mutex_lock(&chp_mutex);
	for_each_cpu(cpu, chp_onlining) {
		cpumask_clear_cpu(cpu, chp_onlining);
		chp_online(cpu);
		chp_park_stat.unpark_physical_ns =
			ktime_get_ns() - per_cpu_ptr(&chp_park_cpu, cpu)->t0;
	}
	chp_proxy_reconcile_locked();
	mutex_unlock(&chp_mutex);
}

static int chp_park_check(const struct cpumask *mask)
{
	bool left = false;
	int cpu;

	/* The boot CPU runs things that cannot move (and often cannot go). */
	if (cpumask_test_cpu(0, mask))
		return -EINVAL;
	for_each_cpu(cpu, mask) {
		if (cpumask_test_cpu(cpu, chp_parked) || !cpu_online(cpu))
			return -EBUSY;
		if (!cpu_is_hotpluggable(cpu))
			return -EOPNOTSUPP;
	}
	for_each_cpu_andnot(cpu, cpu_online_mask, chp_parked)
		if (!cpumask_test_cpu(cpu, mask))
			left = true;
	return left ? 0 : -EINVAL;
}

long chp_park(struct chameleon_proxy_park *arg, const struct cpumask *mask)
{
	u64 t0 = ktime_get_ns();
	unsigned long deadline;
	int cpu, ret;

	if (arg->flags || memchr_inv(arg->reserved, 0, sizeof(arg->reserved)) ||
	    arg->holdoff_ms > CHAMELEON_PROXY_MAX_HOLDOFF_MS)
		return -EINVAL;

	mutex_lock(&chp_mutex);
	ret = chp_park_check(mask);
	if (ret)
		goto out;
	deadline = jiffies + msecs_to_jiffies(arg->holdoff_ms);
	for_each_cpu(cpu, mask) {
		per_cpu_ptr(&chp_park_cpu, cpu)->deadline = deadline;
		per_cpu_ptr(&chp_park_cpu, cpu)->t0 = t0;
	}
	cpumask_or(chp_parked, chp_parked, mask);
	cpumask_or(chp_pending, chp_pending, mask);
	chp_proxy_request_reconcile();
	chp_park_arm(deadline);
	chp_park_stat.parks++;
	arg->critical_ns = ktime_get_ns() - t0;
	chp_park_stat.park_critical_ns = arg->critical_ns;
out:
	mutex_unlock(&chp_mutex);
	return ret;
}

long chp_unpark(struct chameleon_proxy_unpark *arg, const struct cpumask *mask)
{
	u64 t0 = ktime_get_ns();
	bool onlining = false;
	int cpu, ret = 0;

	if (arg->flags || memchr_inv(arg->reserved, 0, sizeof(arg->reserved)))
		return -EINVAL;

	mutex_lock(&chp_mutex);
	if (!cpumask_subset(mask, chp_parked)) {
		ret = -EINVAL;
		goto out;
	}
	for_each_cpu(cpu, mask) {
		/* Not offline yet: clearing the marks cancels its offline. */
		cpumask_clear_cpu(cpu, chp_parked);
		cpumask_clear_cpu(cpu, chp_pending);
		if (cpumask_test_cpu(cpu, chp_offlined)) {
			per_cpu_ptr(&chp_park_cpu, cpu)->t0 = t0;
			cpumask_set_cpu(cpu, chp_onlining);
			onlining = true;
		}
	}
	/*
	 * IRQs come back now; an original affinity may name a CPU still
	 * offline, which is fine. The unpark worker reconciles again once its
	 * CPUs are online.
	 */
	chp_proxy_request_reconcile();
	if (onlining)
		queue_work(system_unbound_wq, &chp_unpark_work);
	chp_park_stat.unparks++;
	arg->critical_ns = ktime_get_ns() - t0;
	chp_park_stat.unpark_critical_ns = arg->critical_ns;
	if (!onlining)
		chp_park_stat.unpark_physical_ns = arg->critical_ns;
out:
	mutex_unlock(&chp_mutex);
	return ret;
}

/* RESET: every CPU unparked, the ones we took offline back online now. */
int chp_park_reset_locked(void)
{
	int cpu, err, ret = 0;

	lockdep_assert_held(&chp_mutex);
	cpumask_clear(chp_parked);
	cpumask_clear(chp_pending);
	cpumask_clear(chp_onlining);
	for_each_cpu(cpu, chp_offlined) {
		err = chp_online(cpu);
		if (err && !ret)
			ret = err;
	}
	return ret;
}

void chp_park_stats(struct chameleon_proxy_stats *st)
{
	lockdep_assert_held(&chp_mutex);
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
}

void chp_park_cpu_stats(int cpu, struct chameleon_proxy_cpu_stats *cs)
{
	lockdep_assert_held(&chp_mutex);
	if (cpu_online(cpu))
		cs->flags |= CHAMELEON_PROXY_CPU_ONLINE;
	if (cpumask_test_cpu(cpu, chp_parked))
		cs->flags |= CHAMELEON_PROXY_CPU_PARKED;
	if (cpumask_test_cpu(cpu, chp_pending))
		cs->flags |= CHAMELEON_PROXY_CPU_PENDING;
	if (cpumask_test_cpu(cpu, chp_offlined))
		cs->flags |= CHAMELEON_PROXY_CPU_OFFLINED;
}

static void chp_park_free(void)
{
	free_cpumask_var(chp_parked);
	free_cpumask_var(chp_pending);
	free_cpumask_var(chp_offlined);
	free_cpumask_var(chp_onlining);
}

int chp_park_init(void)
{
	if (!zalloc_cpumask_var(&chp_parked, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&chp_pending, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&chp_offlined, GFP_KERNEL) ||
	    !zalloc_cpumask_var(&chp_onlining, GFP_KERNEL)) {
		chp_park_free();
		return -ENOMEM;
	}
	return 0;
}

/* Module exit, before the final reset: no worker may run after it. */
void chp_park_quiesce(void)
{
	cancel_delayed_work_sync(&chp_park_work);
	cancel_work_sync(&chp_unpark_work);
}

/* Module exit, after the final reset. */
void chp_park_exit(void)
{
	int cpu;

	for_each_cpu(cpu, chp_offlined)
		pr_warn("CPU %d stays offline\n", cpu);
	chp_park_free();
}
