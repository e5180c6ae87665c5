// SPDX-License-Identifier: GPL-2.0
/*
 * How long the deferred part of a processor proxy takes, for benchmarks.
 *
 * A lend or a reclaim (kfunc) notes when it was called; the reconciliation
 * that applied it (proxy.c: the lent CPU's device IRQs moved off it, or given
 * their saved affinity back) reports here once it is done. The last
 * latency_entries of those are kept in a ring and shown, oldest first, in
 *
 *   /sys/kernel/debug/chameleon_proxy/redirect_latency
 *
 * as a header line starting with '#', then one line per lend or reclaim
 * applied: "lend|reclaim CPU START_NS LATENCY_NS", START_NS being the
 * CLOCK_MONOTONIC time of the kfunc call and LATENCY_NS the time from there
 * to the end of the reconciliation that applied it. The header counts the
 * entries the ring no longer holds (dropped) and what was never applied:
 * lends reclaimed before any reconciliation saw them (nothing was moved) and
 * reclaims whose CPU was lent again before its IRQs came back (nothing had to
 * come back). Writing anything to the file empties the ring and the counts.
 *
 * The ring is written in process context only, by the reconciliation, and
 * has its own mutex; a reader copies it under that mutex when it opens the
 * file, so a slow reader never holds up the reconciliation. The kfuncs only
 * bump the skip counters, lock-free. Without debugfs, or with
 * latency_entries=0, nothing is allocated or recorded.
 *
 * Every open file has a snapshot, whatever its mode: seq_lseek() formats the
 * file up to the offset asked for, so the seq_file callbacks run for a file
 * opened write-only too. A writer's snapshot is empty (it never reads).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/minmax.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/overflow.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>

#include "internal.h"

#define CHP_LAT_MAX_ENTRIES	SZ_1M

static unsigned int latency_entries = 4096;
module_param(latency_entries, uint, 0444);
MODULE_PARM_DESC(latency_entries,
		 "Redirect latencies kept for debugfs (0: none; at most 1048576)");

struct chp_lat_entry {
	u64 start_ns;
	u64 latency_ns;
	u32 cpu;
	u32 op;			/* enum chp_lat_op */
};

/* A reader's copy of the ring, oldest entry first. */
struct chp_lat_snapshot {
	u64 dropped;
	u64 skipped[CHP_LAT_NR_OPS];
	unsigned int nr;
	struct chp_lat_entry e[];
};

static const char * const chp_lat_names[CHP_LAT_NR_OPS] = {
	[CHP_LAT_LEND]		= "lend",
	[CHP_LAT_RECLAIM]	= "reclaim",
};

static DEFINE_MUTEX(chp_lat_lock);
static struct chp_lat_entry *chp_lat_ring;	/* NULL: not recording */
static unsigned int chp_lat_size;
static unsigned int chp_lat_next;	/* slot of the next entry */
static u64 chp_lat_count;		/* entries since the last clear */
static atomic64_t chp_lat_skipped[CHP_LAT_NR_OPS];
static struct dentry *chp_lat_dir;

/* Process context: @op on @cpu, called at @start_ns, applied at @done_ns. */
void chp_latency_record(enum chp_lat_op op, int cpu, u64 start_ns, u64 done_ns)
{
	struct chp_lat_entry *e;

	if (!chp_lat_ring)
		return;
	mutex_lock(&chp_lat_lock);
	e = &chp_lat_ring[chp_lat_next];
	e->start_ns = start_ns;
	e->latency_ns = done_ns - start_ns;
	e->cpu = cpu;
	e->op = op;
	if (++chp_lat_next == chp_lat_size)
		chp_lat_next = 0;
	chp_lat_count++;
	mutex_unlock(&chp_lat_lock);
}

/* Any context (kfuncs): an @op that no reconciliation had to apply. */
void chp_latency_skipped(enum chp_lat_op op)
{
	atomic64_inc(&chp_lat_skipped[op]);
}

static void *chp_lat_start(struct seq_file *m, loff_t *pos)
{
	struct chp_lat_snapshot *s = m->private;

	if (!*pos)
		return SEQ_START_TOKEN;
	return *pos <= s->nr ? &s->e[*pos - 1] : NULL;
}

static void *chp_lat_next_entry(struct seq_file *m, void *v, loff_t *pos)
{
	++*pos;
	return chp_lat_start(m, pos);
}

static void chp_lat_stop(struct seq_file *m, void *v)
{
}

static int chp_lat_show(struct seq_file *m, void *v)
{
	struct chp_lat_snapshot *s = m->private;
	struct chp_lat_entry *e = v;

	if (v == SEQ_START_TOKEN) {
		seq_printf(m, "# entries=%u dropped=%llu lend_skipped=%llu reclaim_skipped=%llu\n",
			   s->nr, s->dropped, s->skipped[CHP_LAT_LEND],
			   s->skipped[CHP_LAT_RECLAIM]);
		return 0;
	}
	seq_printf(m, "%s %u %llu %llu\n", chp_lat_names[e->op], e->cpu,
		   e->start_ns, e->latency_ns);
	return 0;
}

static const struct seq_operations chp_lat_seq_ops = {
	.start	= chp_lat_start,
	.next	= chp_lat_next_entry,
	.stop	= chp_lat_stop,
	.show	= chp_lat_show,
};

static struct chp_lat_snapshot *chp_lat_snapshot(void)
{
	struct chp_lat_snapshot *s;
	unsigned int i, first;
	int op;

	s = kvmalloc(struct_size(s, e, chp_lat_size), GFP_KERNEL);
	if (!s)
		return NULL;
	mutex_lock(&chp_lat_lock);
	s->nr = min_t(u64, chp_lat_count, chp_lat_size);
	s->dropped = chp_lat_count - s->nr;
	first = s->nr < chp_lat_size ? 0 : chp_lat_next;
	for (i = 0; i < s->nr; i++)
		s->e[i] = chp_lat_ring[(first + i) % chp_lat_size];
	mutex_unlock(&chp_lat_lock);
	for (op = 0; op < CHP_LAT_NR_OPS; op++)
		s->skipped[op] = atomic64_read(&chp_lat_skipped[op]);
	return s;
}

static int chp_lat_open(struct inode *inode, struct file *file)
{
	struct chp_lat_snapshot *s;
	int ret;

	if (file->f_mode & FMODE_READ)
		s = chp_lat_snapshot();
	else
		s = kvzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	ret = seq_open(file, &chp_lat_seq_ops);
	if (ret) {
		kvfree(s);
		return ret;
	}
	((struct seq_file *)file->private_data)->private = s;
	return 0;
}

static int chp_lat_release(struct inode *inode, struct file *file)
{
	kvfree(((struct seq_file *)file->private_data)->private);
	return seq_release(inode, file);
}

/* Any write empties the ring and the counts. */
static ssize_t chp_lat_write(struct file *file, const char __user *buf,
			     size_t len, loff_t *ppos)
{
	int op;

	mutex_lock(&chp_lat_lock);
	chp_lat_next = 0;
	chp_lat_count = 0;
	for (op = 0; op < CHP_LAT_NR_OPS; op++)
		atomic64_set(&chp_lat_skipped[op], 0);
	mutex_unlock(&chp_lat_lock);
	return len;
}

static const struct file_operations chp_lat_fops = {
	.owner		= THIS_MODULE,
	.open		= chp_lat_open,
	.read		= seq_read,
	.llseek		= seq_lseek,
	.write		= chp_lat_write,
	.release	= chp_lat_release,
};

int chp_latency_init(void)
{
	if (!IS_ENABLED(CONFIG_DEBUG_FS) || !latency_entries)
		return 0;
	chp_lat_size = min(latency_entries, CHP_LAT_MAX_ENTRIES);
	chp_lat_ring = kvcalloc(chp_lat_size, sizeof(*chp_lat_ring),
				GFP_KERNEL);
	if (!chp_lat_ring)
		return -ENOMEM;
	/* Failures here only mean the file is missing: nothing to check. */
	chp_lat_dir = debugfs_create_dir(KBUILD_MODNAME, NULL);
	debugfs_create_file("redirect_latency", 0600, chp_lat_dir, NULL,
			    &chp_lat_fops);
	return 0;
}

/*
 * Module exit, last: no reconciliation runs any more. An open file holds a
 * module reference, so none is open either.
 */
void chp_latency_exit(void)
{
	debugfs_remove_recursive(chp_lat_dir);
	kvfree(chp_lat_ring);
	chp_lat_ring = NULL;
}
