// SPDX-License-Identifier: GPL-2.0
/*
 * Duty-cycle emulation of fused processors (off by default).
 *
 * Chameleon fuses CPUs into faster "objects" on hardware that can; here we
 * emulate the speed difference on ordinary CPUs by idle injection: every CPU
 * runs only part of the time, and the representative of a fused object runs
 * a larger part, up to all of it. The shares for category "high" are those of
 * the paper's Table 2; "med" and "low" scale the gains down:
 *
 *   category   plain CPU   level 1 (2 CPUs)   level 2 (4 CPUs)   gains
 *   high         50 %          75 %              100 %           1.5x, 2x
 *   med          67 %          83 %              100 %           1.25x, 1.5x
 *   low          80 %          90 %              100 %           1.125x, 1.25x
 *
 * Each online CPU gets its own idle_inject device (one CPU per device, so
 * every CPU can have its own duty cycle). The scheduler sets a CPU's level
 * with the chameleon_proxy_speed() kfunc, under a runqueue lock: it only
 * records the level and raises an irq_work, whose work item applies it under
 * chp_mutex (idle_inject_stop() sleeps). 100 % means the injection stops.
 *
 * CPU hotplug: idle_inject wakes its threads on online CPUs only, so a device
 * whose CPU goes offline just idles and resumes when the CPU comes back; its
 * smpboot thread exists from the CPU's first online on, which is all that
 * idle_inject_stop() needs. A CPU that comes online for the first time while
 * emulating gets its device from the work item, which our CPU hotplug
 * callback queues (the callback itself must not take chp_mutex: the park
 * worker holds it across remove_cpu() and add_cpu()).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/idle_inject.h>
#include <linux/irq_work.h>
#include <linux/percpu.h>
#include <linux/string.h>
#include <linux/workqueue.h>

#include "internal.h"

MODULE_IMPORT_NS("IDLE_INJECT");

/*
 * 10 ms: long enough that the cost of a cycle (hrtimer, waking the injection
 * thread, entering and leaving idle: tens of microseconds, more under TCG)
 * stays well under 1 % of it and the shares above hold; short enough that a
 * task's slice (20 ms by default in sched_ext) always spans a whole cycle, so
 * every task sees the duty cycle instead of landing wholly in a run or an idle
 * phase.
 */
#define CHP_EMUL_PERIOD_US	10000
#define CHP_EMUL_LEVELS		3

static const u8 chp_duty[][CHP_EMUL_LEVELS] = {
	[CHAMELEON_PROXY_CAT_LOW]	= { 80, 90, 100 },
	[CHAMELEON_PROXY_CAT_MED]	= { 67, 83, 100 },
	[CHAMELEON_PROXY_CAT_HIGH]	= { 50, 75, 100 },
};

struct chp_emul_cpu {
	struct idle_inject_device *ii;	/* under chp_mutex */
	unsigned int duty;		/* applied %, 0 without a device */
	bool injecting;			/* idle_inject_start() done */
	bool failed;			/* no device could be had */
	u32 level;			/* wanted; written by the kfunc */
};

static DEFINE_PER_CPU(struct chp_emul_cpu, chp_emul_cpu);

static bool chp_emul_on;	/* under chp_mutex, READ_ONCE() outside */
static u32 chp_emul_cat;	/* under chp_mutex */
static u64 chp_emul_failures;	/* under chp_mutex */
static cpumask_var_t chp_emul_one;	/* idle_inject_register()'s argument */
static int chp_emul_hp_state;

static int chp_emul_attach(int cpu)
{
	struct chp_emul_cpu *ec = per_cpu_ptr(&chp_emul_cpu, cpu);

	if (ec->ii)
		return 0;
	cpumask_clear(chp_emul_one);
	cpumask_set_cpu(cpu, chp_emul_one);
	/* NULL: out of memory, or the CPU has a device already (powerclamp) */
	ec->ii = idle_inject_register(chp_emul_one);
	if (!ec->ii) {
		if (!ec->failed)
			chp_emul_failures++;
		ec->failed = true;
		return -EBUSY;
	}
	ec->duty = 100;
	ec->injecting = false;
	return 0;
}

static void chp_emul_detach(int cpu)
{
	struct chp_emul_cpu *ec = per_cpu_ptr(&chp_emul_cpu, cpu);

	ec->failed = false;
	if (!ec->ii)
		return;
	idle_inject_unregister(ec->ii);	/* stops the injection first */
	ec->ii = NULL;
	ec->duty = 0;
	ec->injecting = false;
}

static void chp_emul_apply(int cpu)
{
	struct chp_emul_cpu *ec = per_cpu_ptr(&chp_emul_cpu, cpu);
	unsigned int duty, run_us;

	if (!ec->ii)
		return;
	duty = chp_duty[chp_emul_cat][READ_ONCE(ec->level)];
	if (duty == ec->duty)
		return;
	if (duty >= 100) {
		if (ec->injecting)
			idle_inject_stop(ec->ii);
		ec->injecting = false;
	} else {
		run_us = CHP_EMUL_PERIOD_US * duty / 100;
		idle_inject_set_duration(ec->ii, run_us,
					 CHP_EMUL_PERIOD_US - run_us);
		/* Fails only for a zero period, which we never set. */
		if (!ec->injecting && idle_inject_start(ec->ii))
			return;
		ec->injecting = true;
	}
	ec->duty = duty;
}

/* Devices for CPUs that came online since, levels applied. */
static void chp_emul_sync_locked(void)
{
	int cpu;

	for_each_online_cpu(cpu)
		chp_emul_attach(cpu);
	for_each_possible_cpu(cpu)
		chp_emul_apply(cpu);
}

static void chp_emul_work_fn(struct work_struct *work)
{
	mutex_lock(&chp_mutex);
	if (chp_emul_on)
		chp_emul_sync_locked();
	mutex_unlock(&chp_mutex);
}

static DECLARE_WORK(chp_emul_work, chp_emul_work_fn);

/* Hard interrupt context, with no runqueue lock held: see proxy.c. */
static void chp_emul_irq_work_fn(struct irq_work *iw)
{
	queue_work(system_unbound_wq, &chp_emul_work);
}

static DEFINE_IRQ_WORK(chp_emul_irq_work, chp_emul_irq_work_fn);

/* CPU hotplug thread of @cpu, hotplug locks held: no chp_mutex here. */
static int chp_emul_cpu_online(unsigned int cpu)
{
	if (READ_ONCE(chp_emul_on))
		queue_work(system_unbound_wq, &chp_emul_work);
	return 0;
}

/* kfunc context (runqueue lock held): record, let the work item apply. */
int chp_emulate_speed(s32 cpu, u32 level)
{
	struct chp_emul_cpu *ec;

	if (!chp_cpu_valid(cpu) || level >= CHP_EMUL_LEVELS)
		return -EINVAL;
	ec = per_cpu_ptr(&chp_emul_cpu, cpu);
	if (xchg(&ec->level, level) != level && READ_ONCE(chp_emul_on))
		irq_work_queue(&chp_emul_irq_work);
	return 0;
}

void chp_emulate_off_locked(void)
{
	int cpu;

	lockdep_assert_held(&chp_mutex);
	WRITE_ONCE(chp_emul_on, false);
	for_each_possible_cpu(cpu)
		chp_emul_detach(cpu);
}

long chp_emulate(struct chameleon_proxy_emulate *arg)
{
	int cpu, ret = 0;

	if (arg->flags || memchr_inv(arg->reserved, 0, sizeof(arg->reserved)) ||
	    arg->on > 1 || arg->category >= ARRAY_SIZE(chp_duty) ||
	    (!arg->on && arg->category))
		return -EINVAL;

	mutex_lock(&chp_mutex);
	if (!arg->on) {
		chp_emulate_off_locked();
		goto out;
	}
	if (!chp_emul_on) {
		/* All or nothing: a partly slowed machine would mislead. */
		for_each_online_cpu(cpu) {
			ret = chp_emul_attach(cpu);
			if (ret) {
				chp_emulate_off_locked();
				goto out;
			}
		}
	}
	chp_emul_cat = arg->category;
	WRITE_ONCE(chp_emul_on, true);
	chp_emul_sync_locked();
out:
	mutex_unlock(&chp_mutex);
	return ret;
}

void chp_emulate_stats(struct chameleon_proxy_stats *st)
{
	lockdep_assert_held(&chp_mutex);
	st->emulate_on = chp_emul_on;
	st->emulate_category = chp_emul_on ? chp_emul_cat : 0;
	st->emulate_failures = chp_emul_failures;
}

void chp_emulate_cpu_stats(int cpu, struct chameleon_proxy_cpu_stats *cs)
{
	struct chp_emul_cpu *ec = per_cpu_ptr(&chp_emul_cpu, cpu);

	lockdep_assert_held(&chp_mutex);
	cs->duty_pct = ec->duty;
	cs->level = READ_ONCE(ec->level);
}

int chp_emulate_init(void)
{
	int ret;

	if (!zalloc_cpumask_var(&chp_emul_one, GFP_KERNEL))
		return -ENOMEM;
	ret = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN,
					"chameleon_proxy:online",
					chp_emul_cpu_online, NULL);
	if (ret < 0) {
		free_cpumask_var(chp_emul_one);
		return ret;
	}
	chp_emul_hp_state = ret;
	return 0;
}

/* Module exit, before the final reset: nothing may queue the work after. */
void chp_emulate_quiesce(void)
{
	cpuhp_remove_state_nocalls(chp_emul_hp_state);
	irq_work_sync(&chp_emul_irq_work);
	cancel_work_sync(&chp_emul_work);
}

/* Module exit, after the final reset turned the emulation off. */
void chp_emulate_exit(void)
{
	free_cpumask_var(chp_emul_one);
}
