// SPDX-License-Identifier: GPL-2.0
/*
 * Duty-cycle emulation of fused processors (off by default).
 *
 * Chameleon fuses CPUs into faster "objects" on hardware that can; here we
 * emulate the speed difference on ordinary CPUs by idle injection: every CPU
 * runs only part of the time, and the representative of a fused object runs
 * a larger part, up to all of it. The shares are the paper's Table 2 (its
 * "Dynamic" rows: a plain CPU is the 50 % baseline in every category):
 *
 *   category   plain CPU   level 1 (2 CPUs)   level 2 (4 CPUs)   gains
 *   high         50 %          75 %              100 %           1.5x, 2x
 *   med          50 %          75 %              87.5 %          1.5x, 1.75x
 *   low          50 %          62.5 %            75 %            1.25x, 1.5x
 *
 * Each online CPU gets its own idle_inject device (one CPU per device, so
 * every CPU can have its own duty cycle). The scheduler sets a CPU's level
 * with the chameleon_proxy_speed() kfunc, under a runqueue lock: it only
 * records the level and raises an irq_work, whose work item (chp_emul_work, on
 * chp_fast_wq) makes the devices agree with the switch, the category and the
 * levels, under chp_emul_mutex (idle_inject_stop() sleeps). 100 % means the
 * injection stops. EMULATE and a release only set the switch (under chp_lock)
 * and queue that work item.
 *
 * The devices are registered while the emulation is on and unregistered when
 * it goes off (EMULATE off, RESET, the owner's release, module exit): a CPU
 * has at most one idle_inject device, so one we kept would keep
 * intel_powerclamp and cpuidle_cooling from registering theirs.
 *
 * Unregistering waits for the CPU's injection thread to be asleep first
 * (chp_emul_asleep()), because idle_inject_stop() does not wait for a thread
 * that is about to inject: it clears the thread's should_run and calls
 * wait_task_inactive(tsk, TASK_ANY) (drivers/powercap/idle_inject.c,
 * idle_inject_stop()), which returns at once for a task in TASK_RUNNING (its
 * __state, 0, matches no bit of TASK_ANY: kernel/sched/core.c,
 * wait_task_inactive() and __task_state_match()). A thread woken by the timer
 * just before, preempted before idle_inject_fn(), runs it afterwards, and
 * idle_inject_fn() reads the CPU's device with no check; unregistered, that is
 * NULL (seen: an oops at idle_inject_fn+0x47 during proxy_stress's ioctl fuzz).
 * Once idle_inject_stop() returned, should_run is 0 for good (its timer is
 * cancelled first), so only a pass of the thread's smpboot loop that read it
 * before can still call idle_inject_fn(); such a pass has not slept since.
 * A thread neither running nor on a runqueue has gone to sleep (or to park,
 * or is being woken and will read should_run afresh): its next pass reads
 * 0, and the device can go. (Not running alone is not enough: between its
 * read of should_run and setting itself TASK_RUNNING the thread still reads
 * TASK_INTERRUPTIBLE; it is on its runqueue then. The thread is SCHED_FIFO,
 * so no delayed dequeue keeps a sleeping one on its runqueue.) A thread not
 * asleep within CHP_EMUL_QUIET_MS (held off its CPU by a higher priority)
 * keeps its device a little longer: the work item tries again later.
 *
 * Compensation: the shares above are what a CPU must deliver, and idle_inject
 * only sets the length of each idle period, not how long the CPU really
 * spends in it. Where timers fire late or the CPU itself stalls (a virtual
 * CPU its host deschedules: TCG, an overcommitted hypervisor), idle periods
 * overrun or are skipped: under TCG a spinner got 30-39 % of a CPU set to
 * 50 %. So every CHP_EMUL_ADJUST_MS we compare the share of time each
 * injecting CPU really spent injected (the injection thread's CPU time, as
 * the scheduler accounts it: play_idle() runs in that thread) with the share
 * asked for, and correct the length of its idle periods by half the
 * difference (an integral step that settles in a few windows without
 * ringing), within [1/4, 3] times the nominal length. /proc/stat cannot be
 * the measure: it counts the injected idle partly as idle, partly as the
 * thread's system time.
 *
 * CPU hotplug: idle_inject wakes its threads on online CPUs only, so a device
 * whose CPU goes offline just idles and resumes when the CPU comes back; its
 * smpboot thread exists from the CPU's first online on, which is all that
 * idle_inject_stop() needs (it waits on that thread). So only CPUs online now
 * get a device; a CPU that comes online for the first time while emulating
 * gets its device from the work item, which our CPU hotplug callback queues
 * (the callback must not take chp_emul_mutex: idle_inject_stop() waits for
 * hotplug under it).
 *
 * The injection thread: the compensation reads its CPU time, and the
 * unregistering waits for it to sleep. idle_inject keeps it in a static
 * per-CPU variable (idle_inject_thread) with no accessor, and the smpboot API
 * does not give it out either, so it is looked up, once per CPU: a kthread
 * bound to that CPU alone, named idle_inject/N (chp_emul_find_thread()). Its
 * runtime is read as /proc/PID/schedstat reads it (fs/proc/base.c,
 * proc_pid_schedstat(): se.sum_exec_runtime): task_sched_runtime(), which
 * would add the running slice, is not exported to modules; a 64-bit read is
 * atomic on the architectures this module builds for (x86-64).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpu.h>
#include <linux/cpuhotplug.h>
#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/idle_inject.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
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
/* How long the unregistering waits for the injection threads to sleep. */
#define CHP_EMUL_QUIET_MS	1000
#define CHP_EMUL_LEVELS		3
/* 20 periods: enough to average one period's jitter out, quick to settle. */
#define CHP_EMUL_ADJUST_MS	200

/* Runnable share per mille (Table 2 has 62.5 % and 87.5 %). */
#define CHP_EMUL_FULL		1000
static const u16 chp_duty[][CHP_EMUL_LEVELS] = {
	[CHAMELEON_PROXY_CAT_LOW]	= { 500, 625, 750 },
	[CHAMELEON_PROXY_CAT_MED]	= { 500, 750, 875 },
	[CHAMELEON_PROXY_CAT_HIGH]	= { 500, 750, 1000 },
};

struct chp_emul_cpu {
	struct idle_inject_device *ii;	/* registered while emulating */
	unsigned int duty;		/* applied, per mille; 0 = not injecting */
	bool injecting;			/* idle_inject_start() done */
	bool failed;			/* no device could be had */
	u32 level;			/* wanted; written by the kfunc */
	int adjust_pm;			/* idle period correction, per mille */
	struct task_struct *thread;	/* idle_inject/N, referenced until exit */
	u64 inj_ns;			/* its CPU time at the last adjustment */
	u64 at_ns;			/* when that was sampled, 0 = not yet */
};

/* Under chp_emul_mutex, but level; duty and adjust_pm READ_ONCE() by STATS. */
static DEFINE_PER_CPU(struct chp_emul_cpu, chp_emul_cpu);
static DEFINE_MUTEX(chp_emul_mutex);

static bool chp_emul_on;	/* under chp_lock, READ_ONCE() outside */
static u32 chp_emul_cat;	/* under chp_lock, READ_ONCE() outside */
static atomic64_t chp_emul_failures;
static atomic_t chp_emul_devices;	/* registered now, for STATS */
static cpumask_var_t chp_emul_one;	/* idle_inject_register()'s argument */

/*
 * The injection thread of @cpu (see the top of this file), referenced; NULL
 * if not found. idle_inject's smpboot thread is a kthread bound to @cpu
 * alone (kthread_bind(): PF_NO_SETAFFINITY, one CPU allowed), named
 * "idle_inject/N" cut to TASK_COMM_LEN - 1 characters. The name alone is
 * ambiguous from CPU 1000 on: CPUs 100 and 1000-1009 all read
 * "idle_inject/100". The binding is not: that is what identifies it, the
 * name only tells it from @cpu's other per-CPU kthreads. Looked up once per
 * CPU, off any hot path.
 */
static struct task_struct *chp_emul_find_thread(int cpu)
{
	const unsigned int bound = PF_KTHREAD | PF_NO_SETAFFINITY;
	char comm[TASK_COMM_LEN];
	struct task_struct *p, *found = NULL;

	/* Cut as the kernel cuts a task's name. */
	snprintf(comm, sizeof(comm), "idle_inject/%d", cpu);
	rcu_read_lock();
	for_each_process(p) {
		if ((p->flags & bound) == bound && p->nr_cpus_allowed == 1 &&
		    cpumask_test_cpu(cpu, p->cpus_ptr) &&
		    !strncmp(p->comm, comm, sizeof(comm))) {
			found = get_task_struct(p);
			break;
		}
	}
	rcu_read_unlock();
	return found;
}

/* A device for @cpu, kept until the emulation ends; under chp_emul_mutex. */
static int chp_emul_attach(int cpu)
{
	struct chp_emul_cpu *ec = per_cpu_ptr(&chp_emul_cpu, cpu);

	lockdep_assert_held(&chp_emul_mutex);
	if (ec->ii)
		return 0;
	cpumask_clear(chp_emul_one);
	cpumask_set_cpu(cpu, chp_emul_one);
	/* NULL: out of memory, or the CPU has a device already (powerclamp) */
	ec->ii = idle_inject_register(chp_emul_one);
	if (!ec->ii) {
		if (!ec->failed)
			atomic64_inc(&chp_emul_failures);
		ec->failed = true;
		return -EBUSY;
	}
	ec->failed = false;
	atomic_inc(&chp_emul_devices);
	WRITE_ONCE(ec->duty, 0);
	ec->adjust_pm = 0;
	ec->injecting = false;
	if (!ec->thread)
		ec->thread = chp_emul_find_thread(cpu);
	return 0;
}

/*
 * After idle_inject_stop(): has @t, the injection thread, gone to sleep in
 * its smpboot loop (or parked)? Only then may its device be unregistered
 * (see the top of this file).
 */
static bool chp_emul_asleep(struct task_struct *t)
{
	return !task_is_running(t) && !READ_ONCE(t->on_rq);
}

/* Waits until @t is asleep, or jiffies reach @end: whether it is. */
static bool chp_emul_quiet(struct task_struct *t, unsigned long end)
{
	if (!t) {
		/* Not found: wait out any idle period that may have begun. */
		msleep(2 * CHP_EMUL_PERIOD_US / USEC_PER_MSEC);
		return true;
	}
	while (!chp_emul_asleep(t)) {
		if (time_after(jiffies, end))
			return false;
		usleep_range(500, 1000);
	}
	return true;
}

/* Nominal idle period at @duty, in us. */
static int chp_emul_nominal_us(unsigned int duty)
{
	return CHP_EMUL_PERIOD_US * (CHP_EMUL_FULL - duty) / CHP_EMUL_FULL;
}

/* The correction at @duty, in us. */
static int chp_emul_adjust_us(unsigned int duty, int adjust_pm)
{
	return chp_emul_nominal_us(duty) * adjust_pm / 1000;
}

/* ec->duty < CHP_EMUL_FULL */
static void chp_emul_set_duration(struct chp_emul_cpu *ec)
{
	int idle_us = chp_emul_nominal_us(ec->duty);

	idle_inject_set_duration(ec->ii, CHP_EMUL_PERIOD_US - idle_us,
				 idle_us + chp_emul_adjust_us(ec->duty, ec->adjust_pm));
}

/*
 * Start a fresh measurement window (the duty changed, injection began). The
 * correction is kept, in proportion to the idle period (the overrun it
 * corrects is a share of each period: about -35 % at 50 % and at 75 % under
 * TCG), so a representative fused again needs no new settling.
 */
static void chp_emul_rebase(struct chp_emul_cpu *ec)
{
	ec->at_ns = 0;
	if (ec->thread) {
		ec->inj_ns = READ_ONCE(ec->thread->se.sum_exec_runtime);
		ec->at_ns = ktime_get_ns();
	}
}

/* Stops @cpu's injection, if any: emulation off. */
static void chp_emul_stop(struct chp_emul_cpu *ec)
{
	if (ec->injecting)
		idle_inject_stop(ec->ii);
	ec->injecting = false;
	WRITE_ONCE(ec->duty, 0);
}

/*
 * Unregisters @ec's device, stopped already, once its injection thread is
 * asleep (waiting until @end at most); under chp_emul_mutex. Returns false
 * if the device is still registered: the thread was not asleep by then.
 */
static bool chp_emul_detach(struct chp_emul_cpu *ec, unsigned long end)
{
	lockdep_assert_held(&chp_emul_mutex);
	if (!ec->ii)
		return true;
	if (!chp_emul_quiet(ec->thread, end))
		return false;
	idle_inject_unregister(ec->ii);
	ec->ii = NULL;
	atomic_dec(&chp_emul_devices);
	return true;
}

/* Gives @cpu the duty of its level in category @cat. */
static void chp_emul_apply(struct chp_emul_cpu *ec, u32 cat)
{
	unsigned int duty;

	if (!ec->ii)
		return;
	duty = chp_duty[cat][READ_ONCE(ec->level)];
	if (duty == ec->duty)
		return;
	WRITE_ONCE(ec->duty, duty);
	chp_emul_rebase(ec);
	if (duty >= CHP_EMUL_FULL) {
		if (ec->injecting)
			idle_inject_stop(ec->ii);
		ec->injecting = false;
	} else {
		chp_emul_set_duration(ec);
		/* Fails only for a zero period, which we never set. */
		if (!ec->injecting && idle_inject_start(ec->ii))
			return;
		ec->injecting = true;
	}
}

/* One CPU's correction (see the top of this file). */
static void chp_emul_adjust_cpu(struct chp_emul_cpu *ec)
{
	s64 nominal_us = chp_emul_nominal_us(ec->duty);
	u64 inj_ns, now = ktime_get_ns();
	s64 wall_ns, want_ns, step_us;

	if (!ec->injecting || !ec->at_ns)
		return;
	wall_ns = now - ec->at_ns;
	if (wall_ns < CHP_EMUL_ADJUST_MS * NSEC_PER_MSEC / 2)
		return;
	/*
	 * A window much longer than the period: the CPU was offline (only
	 * online CPUs are adjusted), and its offline time is no lag to
	 * correct. A fresh window instead.
	 */
	if (wall_ns > 2 * CHP_EMUL_ADJUST_MS * NSEC_PER_MSEC) {
		chp_emul_rebase(ec);
		return;
	}
	inj_ns = READ_ONCE(ec->thread->se.sum_exec_runtime);
	want_ns = div64_s64(wall_ns * (CHP_EMUL_FULL - ec->duty), CHP_EMUL_FULL);
	/*
	 * Half of what was injected too little (or too much) over the window,
	 * as a share of one period: added to (or taken from) each idle period.
	 */
	step_us = div64_s64((want_ns - (s64)(inj_ns - ec->inj_ns)) *
			    CHP_EMUL_PERIOD_US, 2 * wall_ns);
	WRITE_ONCE(ec->adjust_pm,
		   clamp_t(s64, ec->adjust_pm +
			   div64_s64(step_us * 1000, nominal_us), -750, 2000));
	ec->inj_ns = inj_ns;
	ec->at_ns = now;
	chp_emul_set_duration(ec);
}

static void chp_emul_adjust_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(chp_emul_adjust_work, chp_emul_adjust_fn);
static void chp_emul_retry_fn(struct work_struct *work);
static DECLARE_DELAYED_WORK(chp_emul_retry_work, chp_emul_retry_fn);

/* Every CHP_EMUL_ADJUST_MS while on, on the ordered chp_wq. */
static void chp_emul_adjust_fn(struct work_struct *work)
{
	int cpu;

	mutex_lock(&chp_emul_mutex);
	if (READ_ONCE(chp_emul_on)) {
		for_each_online_cpu(cpu)
			chp_emul_adjust_cpu(per_cpu_ptr(&chp_emul_cpu, cpu));
		queue_delayed_work(chp_wq, &chp_emul_adjust_work,
				   msecs_to_jiffies(CHP_EMUL_ADJUST_MS));
	}
	mutex_unlock(&chp_emul_mutex);
}

/*
 * The devices made to agree with the switch, the category and the levels:
 * devices for CPUs that came online since, and each CPU's duty; or, off,
 * every injection stopped and every device unregistered (those whose thread
 * was not asleep within CHP_EMUL_QUIET_MS, one wait for all, a little later).
 */
static void chp_emul_work_fn(struct work_struct *work)
{
	bool on = READ_ONCE(chp_emul_on);
	u32 cat = READ_ONCE(chp_emul_cat);
	unsigned long end;
	bool kept = false;
	int cpu;

	mutex_lock(&chp_emul_mutex);
	if (on) {
		for_each_online_cpu(cpu)
			chp_emul_attach(cpu);
		for_each_possible_cpu(cpu)
			chp_emul_apply(per_cpu_ptr(&chp_emul_cpu, cpu), cat);
		if (!delayed_work_pending(&chp_emul_adjust_work))
			queue_delayed_work(chp_wq, &chp_emul_adjust_work,
					   msecs_to_jiffies(CHP_EMUL_ADJUST_MS));
	} else {
		for_each_possible_cpu(cpu)
			chp_emul_stop(per_cpu_ptr(&chp_emul_cpu, cpu));
		end = jiffies + msecs_to_jiffies(CHP_EMUL_QUIET_MS);
		for_each_possible_cpu(cpu)
			kept |= !chp_emul_detach(per_cpu_ptr(&chp_emul_cpu, cpu), end);
		if (kept)
			queue_delayed_work(chp_wq, &chp_emul_retry_work,
					   msecs_to_jiffies(CHP_EMUL_QUIET_MS));
	}
	mutex_unlock(&chp_emul_mutex);
}

static DECLARE_WORK(chp_emul_work, chp_emul_work_fn);

static void chp_emul_sync(void)
{
	queue_work_on(chp_fast_cpu(), chp_fast_wq, &chp_emul_work);
}

/* A device kept at the last off: the work item once more, on or off. */
static void chp_emul_retry_fn(struct work_struct *work)
{
	chp_emul_sync();
}

/* Hard interrupt context, with no runqueue lock held: see proxy.c. */
static void chp_emul_irq_work_fn(struct irq_work *iw)
{
	chp_emul_sync();
}

static DEFINE_IRQ_WORK(chp_emul_irq_work, chp_emul_irq_work_fn);

/* CPU hotplug callback (main.c): a CPU online for the first time. */
void chp_emulate_cpu_online(unsigned int cpu)
{
	if (READ_ONCE(chp_emul_on))
		chp_emul_sync();
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

/* Release, RESET, CLAIM, under chp_lock: returns whether it was on. */
bool chp_emulate_off(void)
{
	bool was = chp_emul_on;

	lockdep_assert_held(&chp_lock);
	WRITE_ONCE(chp_emul_on, false);
	chp_emul_sync();
	return was;
}

/* Waits for the emulation's work asked for so far. */
void chp_emulate_flush(void)
{
	irq_work_sync(&chp_emul_irq_work);
	flush_work(&chp_emul_work);
}

/* All or nothing: a partly slowed machine would mislead. */
static int chp_emul_attach_all(void)
{
	int cpu, ret = 0;

	mutex_lock(&chp_emul_mutex);
	for_each_online_cpu(cpu) {
		ret = chp_emul_attach(cpu);
		if (ret)
			break;
	}
	mutex_unlock(&chp_emul_mutex);
	return ret;
}

long chp_emulate(struct file *file, struct chameleon_proxy_emulate *arg)
{
	int ret;

	if (arg->flags || memchr_inv(arg->reserved, 0, sizeof(arg->reserved)) ||
	    arg->on > 1 || arg->category >= ARRAY_SIZE(chp_duty) ||
	    (!arg->on && arg->category))
		return -EINVAL;

	/* The owner first: nobody else registers devices. */
	mutex_lock(&chp_lock);
	ret = chp_own_locked(file);
	mutex_unlock(&chp_lock);
	if (ret)
		return ret;
	if (arg->on) {
		ret = chp_emul_attach_all();
		if (ret) {
			/* The devices that were had go (if still off). */
			chp_emul_sync();
			return ret;
		}
	}

	mutex_lock(&chp_lock);
	ret = chp_own_locked(file);
	if (!ret) {
		WRITE_ONCE(chp_emul_cat, arg->category);
		WRITE_ONCE(chp_emul_on, arg->on);
		chp_emul_sync();
	}
	mutex_unlock(&chp_lock);
	/* On or off when this returns, as before ownership existed. */
	if (!ret)
		chp_emulate_flush();
	else if (arg->on)
		chp_emul_sync();	/* the devices just had go */
	return ret;
}

void chp_emulate_stats(struct chameleon_proxy_stats *st)
{
	bool on = READ_ONCE(chp_emul_on);

	st->emulate_on = on;
	st->emulate_category = on ? READ_ONCE(chp_emul_cat) : 0;
	st->emulate_failures = atomic64_read(&chp_emul_failures);
	st->emulate_devices = atomic_read(&chp_emul_devices);
}

void chp_emulate_cpu_stats(int cpu, struct chameleon_proxy_cpu_stats *cs)
{
	struct chp_emul_cpu *ec = per_cpu_ptr(&chp_emul_cpu, cpu);
	unsigned int duty = READ_ONCE(ec->duty);

	cs->duty_pm = duty;
	cs->idle_adjust_us = duty && duty < CHP_EMUL_FULL ?
		chp_emul_adjust_us(duty, READ_ONCE(ec->adjust_pm)) : 0;
	cs->level = READ_ONCE(ec->level);
}

int chp_emulate_init(void)
{
	if (!zalloc_cpumask_var(&chp_emul_one, GFP_KERNEL))
		return -ENOMEM;
	return 0;
}

/* Module exit, before the devices go: nothing may queue the work after. */
void chp_emulate_quiesce(void)
{
	WRITE_ONCE(chp_emul_on, false);
	chp_emulate_flush();
	cancel_delayed_work_sync(&chp_emul_adjust_work);
	cancel_delayed_work_sync(&chp_emul_retry_work);
	/* The adjustment may have been the last to queue nothing: once more. */
	chp_emul_work_fn(NULL);
	cancel_delayed_work_sync(&chp_emul_retry_work);
}

/*
 * Module exit: every device stopped and unregistered (the quiesce did, but
 * for a thread that was not asleep in time: waited for once more here).
 */
void chp_emulate_exit(void)
{
	unsigned long end = jiffies + msecs_to_jiffies(CHP_EMUL_QUIET_MS);
	int cpu;

	mutex_lock(&chp_emul_mutex);
	for_each_possible_cpu(cpu) {
		struct chp_emul_cpu *ec = per_cpu_ptr(&chp_emul_cpu, cpu);

		chp_emul_stop(ec);
		if (!chp_emul_detach(ec, end)) {
			/* Leaked rather than freed under a running thread. */
			pr_err("CPU %d: injection thread still running, device not freed\n",
			       cpu);
			ec->ii = NULL;
		}
		if (ec->thread) {
			put_task_struct(ec->thread);
			ec->thread = NULL;
		}
	}
	mutex_unlock(&chp_emul_mutex);
	free_cpumask_var(chp_emul_one);
}
