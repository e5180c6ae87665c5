// SPDX-License-Identifier: GPL-2.0
/*
 * chameleon_proxy: companion module of the scx_chameleon scheduler.
 *
 * It provides three mechanisms the BPF scheduler and its agent cannot build
 * from BPF or user space alone:
 *
 *  - processor proxies (proxy.c): a CPU the scheduler lends to a
 *    representative stops taking device interrupts, and what still
 *    interrupts it is counted;
 *  - parking (park.c): Bolt-style bulk, deferred CPU hotplug;
 *  - emulation (emulate.c): duty-cycle emulation of fused processors by
 *    idle injection, off by default.
 *
 * For benchmarks, latency.c times the deferred part of the proxies (debugfs).
 *
 * The scheduler reaches the module through kfuncs (kfuncs.c), the agent
 * through ioctls on /dev/chameleon_proxy (this file, and chameleon_proxy.h for
 * the interface). The scheduler works without the module.
 *
 * Critical and non-critical parts
 * -------------------------------
 * Every request is split in what must hold when the call returns (the
 * critical part, done synchronously and kept short) and what may follow (the
 * non-critical part, done by work items): a lend records the lent CPU at
 * once, its IRQs move a little later; a PARK marks the CPUs parked at once,
 * they go offline after the hold-off. The non-critical parts do not replay
 * events: they reconcile the system with the recorded state, so they are
 * idempotent, coalesce naturally, and a request undone before its
 * non-critical part ran leaves nothing behind.
 *
 * Contexts and locks
 * ------------------
 *  - kfuncs: BPF scheduler callbacks, usually under a runqueue lock with
 *    interrupts off, sometimes in hard interrupt context. They may take only
 *    the per-CPU raw spinlocks of proxy.c (leaf locks, always with interrupts
 *    off) and raise an irq_work. They cannot queue a work item directly:
 *    that may wake a kworker, which takes a runqueue lock, possibly the one
 *    already held (deadlock). The irq_work runs once interrupts are back on,
 *    so with no runqueue lock held, and queues the work item from there.
 *  - chp_lock (owner.c), short: the owner, the park states, the emulation's
 *    switch and category. Its holders never sleep on other work or on CPU
 *    hotplug, so the ioctls, STATS and the CPU hotplug callbacks may all take
 *    it.
 *  - chp_wq, ordered: the slow work, one item at a time in queueing order
 *    (park.c's offline and online, the emulation's adjustment, the cleanup
 *    after a release). It holds no lock across remove_cpu() or add_cpu().
 *  - chp_fast_wq, bound and high priority: the work the kfuncs defer (the
 *    IRQ reconciliation, the emulation's sync), queued on a CPU that can run
 *    it at once even when every other CPU is in an object (proxy.c).
 *  - proxy.c's chp_irq_mutex: the saved IRQ affinities, held by a
 *    reconciliation, which may run from a CPU hotplug callback; its holders
 *    never wait for hotplug. emulate.c's chp_emul_mutex: the injection
 *    devices; idle_inject_stop() waits for a hotplug operation in progress
 *    under it, so no hotplug callback takes it and STATS does not either.
 *  - module exit: no file is open, so no owner; the sources of deferred work
 *    are stopped and the work items flushed, then everything is undone
 *    synchronously.
 *
 * Lock order: chp_lock, then a per-CPU proxy lock; chp_irq_mutex, then the
 * IRQ descriptor locks (irq_set_affinity()) or a per-CPU proxy lock;
 * chp_emul_mutex, then the hotplug locks (idle_inject_stop()). Nothing is
 * taken under a per-CPU proxy lock.
 *
 * Every ioctl validates its command and argument and fails with an error code;
 * nothing a user passes can make the module touch kernel state it did not
 * check first.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cpuhotplug.h>
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/workqueue.h>

#include "internal.h"

#ifndef CHP_HAVE_WQ_PERCPU
#define WQ_PERCPU 0	/* before 6.18, the default (Kbuild) */
#endif

struct workqueue_struct *chp_wq;
struct workqueue_struct *chp_fast_wq;
static int chp_hp_state;

/*
 * Copies a user cpumask of @words u64 words into @mask: exactly as many words
 * as nr_cpu_ids needs, no bit past nr_cpu_ids, present CPUs only, not empty.
 */
static int chp_mask_from_user(struct cpumask *mask, u64 uaddr, u32 words)
{
	u32 want = DIV_ROUND_UP(nr_cpu_ids, 64);
	unsigned int tail = nr_cpu_ids % 64;
	u64 *buf;
	int ret = 0;

	if (words != want)
		return -EINVAL;
	buf = memdup_array_user(u64_to_user_ptr(uaddr), words, sizeof(u64));
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	if (tail && buf[words - 1] >> tail) {
		ret = -EINVAL;
		goto out;
	}
	bitmap_from_arr64(cpumask_bits(mask), buf, nr_cpu_ids);
	if (cpumask_empty(mask) || !cpumask_subset(mask, cpu_present_mask))
		ret = -EINVAL;
out:
	kfree(buf);
	return ret;
}

static long chp_ioc_info(struct file *file, void *karg)
{
	struct chameleon_proxy_info *info = karg;

	info->abi_version = CHAMELEON_PROXY_ABI_VERSION;
	info->nr_cpu_ids = nr_cpu_ids;
	info->features = CHAMELEON_PROXY_F_KFUNCS | CHAMELEON_PROXY_F_PARK |
			 CHAMELEON_PROXY_F_EMULATE | CHAMELEON_PROXY_F_STATS |
			 CHAMELEON_PROXY_F_OWNER;
	return 0;
}

static long chp_ioc_park(struct file *file, void *karg)
{
	struct chameleon_proxy_park *arg = karg;
	cpumask_var_t mask;
	long ret;

	if (!alloc_cpumask_var(&mask, GFP_KERNEL))
		return -ENOMEM;
	ret = chp_mask_from_user(mask, arg->mask, arg->mask_words);
	if (!ret)
		ret = chp_park(file, arg, mask);
	free_cpumask_var(mask);
	return ret;
}

static long chp_ioc_unpark(struct file *file, void *karg)
{
	struct chameleon_proxy_unpark *arg = karg;
	cpumask_var_t mask;
	long ret;

	if (!alloc_cpumask_var(&mask, GFP_KERNEL))
		return -ENOMEM;
	ret = chp_mask_from_user(mask, arg->mask, arg->mask_words);
	if (!ret)
		ret = chp_unpark(file, arg, mask);
	free_cpumask_var(mask);
	return ret;
}

static long chp_ioc_emulate(struct file *file, void *karg)
{
	return chp_emulate(file, karg);
}

static void chp_fill_cpu_stats(struct chameleon_proxy_cpu_stats *cs)
{
	unsigned int cpu;

	for (cpu = 0; cpu < nr_cpu_ids; cpu++, cs++) {
		cs->proxied_by = -1;
		if (!cpu_possible(cpu))
			continue;
		chp_proxy_cpu_stats(cpu, cs);
		chp_park_cpu_stats(cpu, cs);
		chp_emulate_cpu_stats(cpu, cs);
	}
}

/* The per-CPU entries go @size bytes apart: the caller's struct size. */
static long chp_copy_cpu_stats(void __user *ucpus, u32 size,
			       const struct chameleon_proxy_cpu_stats *cs)
{
	unsigned int cpu;
	int ret;

	for (cpu = 0; cpu < nr_cpu_ids; cpu++) {
		ret = copy_struct_to_user(ucpus + (size_t)cpu * size, size,
					  &cs[cpu], sizeof(*cs), NULL);
		if (ret)
			return ret;
	}
	return 0;
}

static long chp_ioc_stats(struct file *file, void *karg)
{
	struct chameleon_proxy_stats *st = karg;
	struct chameleon_proxy_cpu_stats *cs = NULL;
	u64 ucpus = st->cpus;
	u32 nr = st->nr_cpus, size = st->cpu_size;
	long ret = 0;

	if (st->flags)
		return -EINVAL;
	if (!nr && ucpus)
		return -EINVAL;
	if (nr && (nr != nr_cpu_ids || size < sizeof(*cs) ||
		   size > PAGE_SIZE || size % sizeof(u64)))
		return -EINVAL;
	/*
	 * Filled first, copied out after: a fault on the user buffer
	 * (userfaultfd) must not happen under chp_lock.
	 */
	if (nr) {
		cs = kvcalloc(nr, sizeof(*cs), GFP_KERNEL);
		if (!cs)
			return -ENOMEM;
	}
	/* Whatever the caller left in the output fields goes. */
	memset(st, 0, sizeof(*st));
	st->cpus = ucpus;
	st->nr_cpus = nr;
	st->cpu_size = size;

	/* Never waits on the slow work: see "Contexts and locks". */
	chp_owner_stats(st);
	chp_proxy_stats(st);
	chp_park_stats(st);
	chp_emulate_stats(st);
	if (cs)
		chp_fill_cpu_stats(cs);

	if (cs)
		ret = chp_copy_cpu_stats(u64_to_user_ptr(ucpus), size, cs);
	kvfree(cs);
	return ret;
}

static long chp_ioc_reset(struct file *file, void *karg)
{
	return chp_reset(file);
}

static long chp_ioc_claim(struct file *file, void *karg)
{
	return chp_claim(file, karg);
}

union chp_ioc_arg {
	struct chameleon_proxy_info info;
	struct chameleon_proxy_park park;
	struct chameleon_proxy_unpark unpark;
	struct chameleon_proxy_emulate emulate;
	struct chameleon_proxy_stats stats;
	struct chameleon_proxy_claim claim;
};

/*
 * The commands, by number. @size is the size of the first version of the
 * argument: a caller may pass a larger one (see chameleon_proxy.h).
 */
static const struct chp_ioc {
	long (*fn)(struct file *file, void *karg);
	unsigned int dir;
	unsigned int size;
	bool admin;
} chp_iocs[] = {
	[_IOC_NR(CHAMELEON_PROXY_IOC_INFO)] = {
		chp_ioc_info, _IOC_READ, sizeof(struct chameleon_proxy_info) },
	[_IOC_NR(CHAMELEON_PROXY_IOC_PARK)] = {
		chp_ioc_park, _IOC_READ | _IOC_WRITE,
		sizeof(struct chameleon_proxy_park), true },
	[_IOC_NR(CHAMELEON_PROXY_IOC_UNPARK)] = {
		chp_ioc_unpark, _IOC_READ | _IOC_WRITE,
		sizeof(struct chameleon_proxy_unpark), true },
	[_IOC_NR(CHAMELEON_PROXY_IOC_EMULATE)] = {
		chp_ioc_emulate, _IOC_WRITE,
		sizeof(struct chameleon_proxy_emulate), true },
	[_IOC_NR(CHAMELEON_PROXY_IOC_STATS)] = {
		chp_ioc_stats, _IOC_READ | _IOC_WRITE,
		sizeof(struct chameleon_proxy_stats) },
	[_IOC_NR(CHAMELEON_PROXY_IOC_RESET)] = {
		chp_ioc_reset, _IOC_NONE, 0, true },
	[_IOC_NR(CHAMELEON_PROXY_IOC_CLAIM)] = {
		chp_ioc_claim, _IOC_READ | _IOC_WRITE,
		sizeof(struct chameleon_proxy_claim), true },
};

static long chameleon_proxy_ioctl(struct file *file, unsigned int cmd,
				  unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	unsigned int usize = _IOC_SIZE(cmd);
	const struct chp_ioc *ioc;
	union chp_ioc_arg karg;
	long ret;

	/* The size is not part of the match: it is the struct's version. */
	if (_IOC_TYPE(cmd) != CHAMELEON_PROXY_IOC_MAGIC ||
	    _IOC_NR(cmd) >= ARRAY_SIZE(chp_iocs))
		return -ENOTTY;
	/* The user's number indexes a table of function pointers: no speculation past its end. */
	ioc = &chp_iocs[array_index_nospec(_IOC_NR(cmd), ARRAY_SIZE(chp_iocs))];
	if (!ioc->fn || _IOC_DIR(cmd) != ioc->dir)
		return -ENOTTY;
	if (ioc->admin && !capable(CAP_SYS_ADMIN))
		return -EPERM;
	if (ioc->dir == _IOC_NONE)
		return usize || arg ? -EINVAL : ioc->fn(file, NULL);
	if (usize < ioc->size)
		return -EINVAL;

	memset(&karg, 0, sizeof(karg));
	if (ioc->dir & _IOC_WRITE) {
		ret = copy_struct_from_user(&karg, ioc->size, uarg, usize);
		if (ret)
			return ret;
	}
	ret = ioc->fn(file, &karg);
	if (!ret && (ioc->dir & _IOC_READ))
		ret = copy_struct_to_user(uarg, usize, &karg, ioc->size, NULL);
	return ret;
}

/* Any close of the owner's file, kill -9 included: see owner.c. */
static int chameleon_proxy_release(struct inode *inode, struct file *file)
{
	chp_release(file);
	return 0;
}

/*
 * CPU hotplug, from the CPU's hotplug thread with the hotplug locks held: the
 * callbacks take chp_lock and chp_irq_mutex, whose holders never wait for
 * hotplug (see "Contexts and locks").
 */
static int chp_cpu_online(unsigned int cpu)
{
	chp_park_cpu_online(cpu);
	chp_emulate_cpu_online(cpu);
	/* IRQs held off this CPU while it was away may come back. */
	chp_proxy_reconcile_hotplug(cpu, true);
	return 0;
}

static int chp_cpu_offline(unsigned int cpu)
{
	/*
	 * Before the kernel moves IRQs off the dying CPU: one we moved onto it
	 * must go elsewhere now, or the kernel breaks its affinity to all CPUs
	 * and the original is lost; one whose original is this CPU alone waits
	 * for it to come back.
	 */
	chp_proxy_reconcile_hotplug(cpu, false);
	return 0;
}

static const struct file_operations chameleon_proxy_fops = {
	.owner		= THIS_MODULE,
	.release	= chameleon_proxy_release,
	.unlocked_ioctl	= chameleon_proxy_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

static struct miscdevice chameleon_proxy_dev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "chameleon_proxy",
	.fops	= &chameleon_proxy_fops,
	.mode	= 0600,
};

static void chp_wq_destroy(void)
{
	if (chp_wq)
		destroy_workqueue(chp_wq);
	if (chp_fast_wq)
		destroy_workqueue(chp_fast_wq);
}

static int __init chameleon_proxy_init(void)
{
	int ret;

	chp_wq = alloc_ordered_workqueue("chameleon_proxy", WQ_HIGHPRI);
	chp_fast_wq = alloc_workqueue("chameleon_proxy_fast",
				      WQ_HIGHPRI | WQ_PERCPU, 0);
	if (!chp_wq || !chp_fast_wq) {
		chp_wq_destroy();
		return -ENOMEM;
	}
	ret = chp_latency_init();
	if (ret)
		goto err_wq;
	ret = chp_proxy_init();
	if (ret)
		goto err_latency;
	ret = chp_park_init();
	if (ret)
		goto err_proxy;
	ret = chp_emulate_init();
	if (ret)
		goto err_park;
	ret = cpuhp_setup_state_nocalls(CPUHP_AP_ONLINE_DYN,
					"chameleon_proxy:online",
					chp_cpu_online, chp_cpu_offline);
	if (ret < 0)
		goto err_emulate;
	chp_hp_state = ret;
	/*
	 * Nothing can call the kfuncs before init returns (BPF programs only
	 * get a module's kfuncs once it is live), nor the ioctls before
	 * misc_register(): the error paths below have nothing to undo but
	 * allocations and the hotplug state.
	 */
	ret = chp_kfuncs_register();
	if (ret) {
		pr_err("cannot register the kfuncs: %d\n", ret);
		goto err_hp;
	}
	ret = misc_register(&chameleon_proxy_dev);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", chameleon_proxy_dev.name, ret);
		goto err_hp;
	}
	pr_info("loaded, ABI %d, %u CPU ids\n", CHAMELEON_PROXY_ABI_VERSION,
		nr_cpu_ids);
	return 0;

err_hp:
	cpuhp_remove_state_nocalls(chp_hp_state);
err_emulate:
	chp_emulate_quiesce();
	chp_emulate_exit();
err_park:
	chp_park_exit();
err_proxy:
	chp_proxy_exit();
err_latency:
	chp_latency_exit();
err_wq:
	chp_wq_destroy();
	return ret;
}

static void __exit chameleon_proxy_exit(void)
{
	/*
	 * No ioctl runs now and no file is open (each holds a module
	 * reference), so there is no owner and every release has queued its
	 * cleanup; no kfunc runs either (a loaded BPF program calling them
	 * holds one too).
	 */
	misc_deregister(&chameleon_proxy_dev);
	cpuhp_remove_state_nocalls(chp_hp_state);
	chp_owner_exit();
	chp_emulate_quiesce();
	chp_park_quiesce();
	chp_proxy_quiesce();
	/* What the cleanups could not undo, once more, synchronously. */
	chp_park_exit_online();
	chp_proxy_end_lends();
	chp_proxy_reconcile();

	chp_emulate_exit();
	chp_park_exit();
	chp_proxy_exit();
	chp_latency_exit();
	chp_wq_destroy();
	pr_info("unloaded\n");
}

module_init(chameleon_proxy_init);
module_exit(chameleon_proxy_exit);

MODULE_DESCRIPTION("Processor proxies and fast hotplug for scx_chameleon");
MODULE_AUTHOR("scx_chameleon developers");
MODULE_LICENSE("GPL");
