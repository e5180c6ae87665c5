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
 * Contexts
 * --------
 *  - kfuncs: BPF scheduler callbacks, usually under a runqueue lock with
 *    interrupts off, sometimes in hard interrupt context. They may take only
 *    the per-CPU raw spinlocks of proxy.c (leaf locks, always with interrupts
 *    off) and raise an irq_work. They cannot queue a work item directly:
 *    that may wake a kworker, which takes a runqueue lock, possibly the one
 *    already held (deadlock). The irq_work runs once interrupts are back on,
 *    so with no runqueue lock held, and queues the work item from there.
 *  - ioctls and work items: process context, serialised by chp_mutex. The
 *    park and unpark work items call remove_cpu() and add_cpu() holding
 *    chp_mutex (never cpus_read_lock(): those take the hotplug locks
 *    themselves), which is safe because no hotplug path takes chp_mutex: our
 *    only hotplug callback just queues a work item.
 *  - module exit: first the sources of deferred work are stopped and the work
 *    items cancelled (without chp_mutex held, since they take it), then,
 *    under chp_mutex, everything is undone synchronously: emulation off, the
 *    CPUs we offlined back online, every lend ended and every IRQ affinity we
 *    changed restored.
 *
 * Lock order: chp_mutex, then the hotplug locks (remove_cpu(), add_cpu(),
 * idle_inject_stop()), the IRQ descriptor locks (irq_set_affinity()) or a
 * per-CPU proxy lock. Nothing is taken under a per-CPU proxy lock.
 *
 * Every ioctl validates its command and argument and fails with an error code;
 * nothing a user passes can make the module touch kernel state it did not
 * check first.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/capability.h>
#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/nospec.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "internal.h"

/* The ioctls and the workers, in turn (internal.h); never a kfunc. */
DEFINE_MUTEX(chp_mutex);

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

static long chp_ioc_info(void *karg)
{
	struct chameleon_proxy_info *info = karg;

	info->abi_version = CHAMELEON_PROXY_ABI_VERSION;
	info->nr_cpu_ids = nr_cpu_ids;
	info->features = CHAMELEON_PROXY_F_KFUNCS | CHAMELEON_PROXY_F_PARK |
			 CHAMELEON_PROXY_F_EMULATE | CHAMELEON_PROXY_F_STATS;
	return 0;
}

static long chp_ioc_park(void *karg)
{
	struct chameleon_proxy_park *arg = karg;
	cpumask_var_t mask;
	long ret;

	if (!alloc_cpumask_var(&mask, GFP_KERNEL))
		return -ENOMEM;
	ret = chp_mask_from_user(mask, arg->mask, arg->mask_words);
	if (!ret)
		ret = chp_park(arg, mask);
	free_cpumask_var(mask);
	return ret;
}

static long chp_ioc_unpark(void *karg)
{
	struct chameleon_proxy_unpark *arg = karg;
	cpumask_var_t mask;
	long ret;

	if (!alloc_cpumask_var(&mask, GFP_KERNEL))
		return -ENOMEM;
	ret = chp_mask_from_user(mask, arg->mask, arg->mask_words);
	if (!ret)
		ret = chp_unpark(arg, mask);
	free_cpumask_var(mask);
	return ret;
}

static long chp_ioc_emulate(void *karg)
{
	return chp_emulate(karg);
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

static long chp_ioc_stats(void *karg)
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
	 * Filled under chp_mutex, copied out after: a fault on the user
	 * buffer (userfaultfd) must not hold up the workers.
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

	mutex_lock(&chp_mutex);
	chp_proxy_stats(st);
	chp_park_stats(st);
	chp_emulate_stats(st);
	if (cs)
		chp_fill_cpu_stats(cs);
	mutex_unlock(&chp_mutex);

	if (cs)
		ret = chp_copy_cpu_stats(u64_to_user_ptr(ucpus), size, cs);
	kvfree(cs);
	return ret;
}

static int chp_reset_locked(void)
{
	int ret;

	chp_emulate_off_locked();
	ret = chp_park_reset_locked();
	/* Last, so that the CPUs we offlined are back when IRQs are restored. */
	chp_proxy_reset_locked();
	return ret;
}

static long chp_ioc_reset(void *karg)
{
	int ret;

	mutex_lock(&chp_mutex);
	ret = chp_reset_locked();
	mutex_unlock(&chp_mutex);
	return ret;
}

union chp_ioc_arg {
	struct chameleon_proxy_info info;
	struct chameleon_proxy_park park;
	struct chameleon_proxy_unpark unpark;
	struct chameleon_proxy_emulate emulate;
	struct chameleon_proxy_stats stats;
};

/*
 * The commands, by number. @size is the size of the first version of the
 * argument: a caller may pass a larger one (see chameleon_proxy.h).
 */
static const struct chp_ioc {
	long (*fn)(void *karg);
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
		return usize || arg ? -EINVAL : ioc->fn(NULL);
	if (usize < ioc->size)
		return -EINVAL;

	memset(&karg, 0, sizeof(karg));
	if (ioc->dir & _IOC_WRITE) {
		ret = copy_struct_from_user(&karg, ioc->size, uarg, usize);
		if (ret)
			return ret;
	}
	ret = ioc->fn(&karg);
	if (!ret && (ioc->dir & _IOC_READ))
		ret = copy_struct_to_user(uarg, usize, &karg, ioc->size, NULL);
	return ret;
}

static const struct file_operations chameleon_proxy_fops = {
	.owner		= THIS_MODULE,
	.unlocked_ioctl	= chameleon_proxy_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

static struct miscdevice chameleon_proxy_dev = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "chameleon_proxy",
	.fops	= &chameleon_proxy_fops,
	.mode	= 0600,
};

static int __init chameleon_proxy_init(void)
{
	int ret;

	ret = chp_latency_init();
	if (ret)
		return ret;
	ret = chp_proxy_init();
	if (ret)
		goto err_latency;
	ret = chp_park_init();
	if (ret)
		goto err_proxy;
	ret = chp_emulate_init();
	if (ret)
		goto err_park;
	/*
	 * Nothing can call the kfuncs before init returns (BPF programs only
	 * get a module's kfuncs once it is live), nor the ioctls before
	 * misc_register(): the error paths below have nothing to undo but
	 * allocations and the hotplug state.
	 */
	ret = chp_kfuncs_register();
	if (ret) {
		pr_err("cannot register the kfuncs: %d\n", ret);
		goto err_emulate;
	}
	ret = misc_register(&chameleon_proxy_dev);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", chameleon_proxy_dev.name, ret);
		goto err_emulate;
	}
	pr_info("loaded, ABI %d, %u CPU ids\n", CHAMELEON_PROXY_ABI_VERSION,
		nr_cpu_ids);
	return 0;

err_emulate:
	chp_emulate_quiesce();
	chp_emulate_exit();
err_park:
	chp_park_exit();
err_proxy:
	chp_proxy_exit();
err_latency:
	chp_latency_exit();
	return ret;
}

static void __exit chameleon_proxy_exit(void)
{
	/* No ioctl runs now: an open file holds a module reference. */
	misc_deregister(&chameleon_proxy_dev);
	chp_emulate_quiesce();
	chp_park_quiesce();
	chp_proxy_quiesce();

	mutex_lock(&chp_mutex);
	chp_reset_locked();
	mutex_unlock(&chp_mutex);

	chp_emulate_exit();
	chp_park_exit();
	chp_proxy_exit();
	chp_latency_exit();
	pr_info("unloaded\n");
}

module_init(chameleon_proxy_init);
module_exit(chameleon_proxy_exit);

MODULE_DESCRIPTION("Processor proxies and fast hotplug for scx_chameleon");
MODULE_AUTHOR("scx_chameleon developers");
MODULE_LICENSE("GPL");
