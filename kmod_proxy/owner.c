// SPDX-License-Identifier: GPL-2.0
/*
 * Ownership: the module's state belongs to the open file that made it.
 *
 * Parked CPUs, lent CPUs (and the IRQs moved off them) and the emulation are
 * requests of a live scheduler. If its agent dies (kill -9, a crash, the OOM
 * killer), nobody is left to undo them: a pending park would still take its
 * CPUs offline, injection would keep every CPU at half speed. So one open file
 * owns the state, and its release undoes it all, whatever way its process
 * ended.
 *
 * The owner is the file that sent CLAIM, or the first PARK, UNPARK, EMULATE or
 * RESET while there was none (so a one-shot tool needs no CLAIM). A mutating
 * ioctl from another file fails with -EACCES once its argument is checked.
 * The owner's process (its thread group) is also the only one whose BPF
 * programs may call the kfuncs (kfuncs.c), and a program's calls change
 * nothing once the owner it was loaded under is gone, whether another file
 * has claimed the module since or not: a scheduler outliving its agent for
 * the few hundred milliseconds the kernel takes to unload it, or a program
 * pinned in bpffs, cannot lend anything under the next owner.
 *
 * Generations: each ownership has one, the boot time (ns) at which it began,
 * made strictly greater than every earlier one (so never 0 and never the same
 * twice, across module reloads too). CLAIM returns it, and the owner's
 * programs pass it to every kfunc that changes the state, from a constant
 * set before they were loaded: a program that outlives its owner keeps
 * passing that owner's, which the kfuncs refuse (chp_owner_admits()). The
 * kfuncs do not ask the verifier which program calls them instead (an
 * argument named "...__prog" or typed struct bpf_prog_aux *, which it fills
 * in with the caller's bpf_prog_aux): for a module's kfunc that arrived as
 * the caller's on 7.3.4 but NULL on 6.16.12.
 *
 * Release: the critical part is synchronous and short, under chp_lock: the
 * owner goes, parks not done yet are cancelled, every lend ends, the emulation
 * is switched off. The rest (CPUs we took offline back online, injection
 * stopped, IRQ affinities restored) is queued: park.c's unpark work on
 * chp_wq, the emulation's sync and the IRQ reconciliation on chp_fast_wq;
 * chp_cleanup_work, queued after them on the ordered chp_wq, waits for the
 * fast ones and times the whole. A remove_cpu() in flight at release cannot
 * be aborted: its CPU goes offline and the unpark work, ordered after it,
 * brings it back.
 *
 * CLAIM and RESET wait for all of it (no lock held), killably: that can be
 * long (a remove_cpu() whose CPU's hotplug thread does not get to run waits
 * as long as that lasts), and an agent stuck there must stay killable. They
 * queue a barrier (struct chp_barrier) on the ordered chp_wq, which runs
 * once everything queued before it has, waits for the fast work items in
 * turn, and completes. A fatal signal ends the wait with -EINTR: the work
 * goes on without the waiter (the barrier is freed by whichever of the two
 * lets go of it last), and the caller's file, released as its process
 * exits, undoes the state as any release does.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/completion.h>
#include <linux/fs.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/refcount.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/workqueue.h>

#include "internal.h"

/* The owner, the park states, the emulation switch: see main.c. */
DEFINE_MUTEX(chp_lock);

static struct file *chp_owner;		/* under chp_lock */
static struct pid *chp_owner_tgid;	/* under chp_lock; READ_ONCE() outside */
/* The owner's generation, 0 while there is none; as chp_owner_tgid. */
static u64 chp_owner_gen;
static u64 chp_last_gen;		/* under chp_lock */
static u32 chp_releases;		/* under chp_lock */
static u64 chp_release_ns;		/* ktime of the last release */
static u64 chp_cleanup_ns;		/* its release to the end of cleanup */

/* What the last release found to undo, for the next CLAIM to report. */
static struct chameleon_proxy_claim chp_left;	/* under chp_lock */

static void chp_cleanup_fn(struct work_struct *work);
static DECLARE_WORK(chp_cleanup_work, chp_cleanup_fn);

/* Lock-free: a BPF program is being verified in its loader's context. */
bool chp_owner_is_current(void)
{
	struct pid *tgid = READ_ONCE(chp_owner_tgid);

	/* Compared, never dereferenced: chp_owner_tgid holds a reference. */
	return tgid && tgid == task_tgid(current);
}

/*
 * The kfuncs, lock-free: is @gen, passed by the calling program, the current
 * owner's generation? Never while there is no owner. See "Generations" at
 * the top.
 */
bool chp_owner_admits(u64 gen)
{
	return gen && gen == READ_ONCE(chp_owner_gen);
}

/*
 * May @file change the state? It may if it owns the module, or if nobody does:
 * it becomes the owner. The caller has checked its argument already, so a bad
 * request gets its own error whoever sends it.
 */
int chp_own_locked(struct file *file)
{
	lockdep_assert_held(&chp_lock);
	if (chp_owner == file)
		return 0;
	if (chp_owner)
		return -EACCES;
	chp_owner = file;
	/* A new generation, whatever the clock's resolution. */
	chp_last_gen = max(ktime_get_boottime_ns(), chp_last_gen + 1);
	WRITE_ONCE(chp_owner_gen, chp_last_gen);
	WRITE_ONCE(chp_owner_tgid, get_pid(task_tgid(current)));
	return 0;
}

/*
 * Everything the owner set up is undone: the synchronous part here, the rest
 * queued. Returns what there was, as CHAMELEON_PROXY_FOUND_* bits.
 */
static u64 chp_undo_locked(struct chameleon_proxy_claim *found)
{
	u64 bits = 0;
	u32 n;

	lockdep_assert_held(&chp_lock);
	n = chp_park_undo_locked(&bits);
	found->nr_offlined += n;
	if (chp_proxy_end_lends())
		bits |= CHAMELEON_PROXY_FOUND_LENT;
	n = chp_proxy_nr_moved();
	if (n)
		bits |= CHAMELEON_PROXY_FOUND_IRQS;
	found->nr_irqs += n;
	if (chp_emulate_off())
		bits |= CHAMELEON_PROXY_FOUND_EMULATING;
	chp_proxy_request_reconcile();
	found->found |= bits;
	return bits;
}

/* Before 7.0, slab.h has no kmalloc_obj(): the same, by hand. */
#ifndef kmalloc_obj
#define kmalloc_obj(VAR_OR_TYPE, GFP)	kmalloc(sizeof(VAR_OR_TYPE), GFP)
#endif

/* A waiter's marker on chp_wq: see the top of this file. */
struct chp_barrier {
	struct work_struct work;
	struct completion done;
	refcount_t ref;		/* the waiter's and the work item's */
};

static void chp_barrier_put(struct chp_barrier *b)
{
	if (refcount_dec_and_test(&b->ref))
		kfree(b);
}

static void chp_barrier_fn(struct work_struct *work)
{
	struct chp_barrier *b = container_of(work, struct chp_barrier, work);

	/* Ordered after everything queued on chp_wq before it. */
	chp_proxy_flush();
	chp_emulate_flush();
	complete(&b->done);
	chp_barrier_put(b);
}

/*
 * Waits for every queued part of an undo (no lock held): 0, or -EINTR if a
 * fatal signal came first (the work goes on).
 */
static int chp_flush(void)
{
	struct chp_barrier *b;
	int ret;

	b = kmalloc_obj(*b, GFP_KERNEL);
	if (!b) {
		/* No barrier to wait on: the same wait, not killable. */
		flush_workqueue(chp_wq);
		chp_proxy_flush();
		chp_emulate_flush();
		return 0;
	}
	INIT_WORK(&b->work, chp_barrier_fn);
	init_completion(&b->done);
	refcount_set(&b->ref, 2);
	queue_work(chp_wq, &b->work);
	ret = wait_for_completion_killable(&b->done);
	chp_barrier_put(b);
	return ret ? -EINTR : 0;
}

static void chp_cleanup_fn(struct work_struct *work)
{
	/* Ordered after the unpark work on chp_wq; the fast ones, waited for. */
	chp_proxy_flush();
	chp_emulate_flush();
	WRITE_ONCE(chp_cleanup_ns, ktime_get_ns() - READ_ONCE(chp_release_ns));
}

/* The device's release: see the top of this file. */
void chp_release(struct file *file)
{
	struct pid *tgid;

	mutex_lock(&chp_lock);
	if (chp_owner != file) {
		mutex_unlock(&chp_lock);
		return;
	}
	WRITE_ONCE(chp_release_ns, ktime_get_ns());
	tgid = chp_owner_tgid;
	chp_owner = NULL;
	WRITE_ONCE(chp_owner_tgid, NULL);
	/* Before the lends end: see chp_proxy_lend(). */
	WRITE_ONCE(chp_owner_gen, 0);
	chp_releases++;
	chp_undo_locked(&chp_left);
	queue_work(chp_wq, &chp_cleanup_work);
	mutex_unlock(&chp_lock);
	put_pid(tgid);
}

long chp_claim(struct file *file, struct chameleon_proxy_claim *arg)
{
	struct chameleon_proxy_claim found = {};
	u64 gen;
	int ret;

	if (arg->flags || memchr_inv(arg->reserved, 0, sizeof(arg->reserved)))
		return -EINVAL;
	mutex_lock(&chp_lock);
	if (chp_owner == file) {
		memset(arg, 0, sizeof(*arg));
		arg->generation = chp_owner_gen;
		mutex_unlock(&chp_lock);
		return 0;
	}
	if (chp_owner) {
		mutex_unlock(&chp_lock);
		return -EBUSY;
	}
	mutex_unlock(&chp_lock);

	/* The previous owner's cleanup first; killed, nothing was claimed. */
	ret = chp_flush();
	if (ret)
		return ret;

	mutex_lock(&chp_lock);
	/* Another file may have taken it meanwhile: busy, as above. */
	ret = chp_owner && chp_owner != file ? -EBUSY : chp_own_locked(file);
	gen = chp_owner_gen;
	if (!ret) {
		/* Left with no owner: a cleanup step that failed. */
		found = chp_left;
		memset(&chp_left, 0, sizeof(chp_left));
		if (chp_undo_locked(&found))
			pr_warn("CLAIM by pid %d: state of no owner undone\n",
				task_tgid_vnr(current));
	}
	mutex_unlock(&chp_lock);
	if (ret)
		return ret;
	/* Killed: this file owns the module; its release undoes all. */
	ret = chp_flush();
	if (ret)
		return ret;
	memset(arg, 0, sizeof(*arg));
	arg->found = found.found;
	arg->nr_offlined = found.nr_offlined;
	arg->nr_irqs = found.nr_irqs;
	/* Ours until our release, which the caller cannot race: it holds us. */
	arg->generation = gen;
	return 0;
}

/* RESET: the owner's state undone, and waited for; it stays the owner. */
long chp_reset(struct file *file)
{
	struct chameleon_proxy_claim found = {};
	int ret;

	mutex_lock(&chp_lock);
	ret = chp_own_locked(file);
	if (!ret)
		chp_undo_locked(&found);
	mutex_unlock(&chp_lock);
	if (ret)
		return ret;
	ret = chp_flush();
	return ret ? ret : chp_park_error();
}

void chp_owner_stats(struct chameleon_proxy_stats *st)
{
	mutex_lock(&chp_lock);
	st->owner_pid = chp_owner_tgid ? pid_vnr(chp_owner_tgid) : 0;
	st->releases = chp_releases;
	mutex_unlock(&chp_lock);
	st->cleanup_ns = READ_ONCE(chp_cleanup_ns);
}

/*
 * Module exit: no file is open, so there is no owner; its cleanup and the
 * barriers of killed waiters (their text is ours) are done or cancelled.
 */
void chp_owner_exit(void)
{
	cancel_work_sync(&chp_cleanup_work);
	flush_workqueue(chp_wq);
}
