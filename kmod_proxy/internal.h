/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Declarations shared by the files of the chameleon_proxy module. See main.c
 * for the design and the locking rules.
 */
#ifndef _CHAMELEON_PROXY_INTERNAL_H
#define _CHAMELEON_PROXY_INTERNAL_H

#include <linux/cpumask.h>
#include <linux/mutex.h>
#include <linux/types.h>

#include "chameleon_proxy.h"

struct file;
struct workqueue_struct;

/* The owner, the park states, the emulation's switch (owner.c); short. */
extern struct mutex chp_lock;
/* Ordered: offline, online, emulation adjustment, cleanup (main.c). */
extern struct workqueue_struct *chp_wq;
/* Bound, high priority: the work the kfuncs defer (proxy.c, emulate.c). */
extern struct workqueue_struct *chp_fast_wq;

static inline bool chp_cpu_valid(s32 cpu)
{
	return cpu >= 0 && cpu < nr_cpu_ids && cpu_possible(cpu);
}

/* owner.c: the state belongs to the file that made it */
bool chp_owner_is_current(void);
bool chp_owner_admits(u64 gen);
int chp_own_locked(struct file *file);
void chp_release(struct file *file);
long chp_claim(struct file *file, struct chameleon_proxy_claim *arg);
long chp_reset(struct file *file);
void chp_owner_stats(struct chameleon_proxy_stats *st);
void chp_owner_exit(void);

/* proxy.c: lent CPUs and the IRQ affinity reconciliation */
int chp_proxy_init(void);
void chp_proxy_quiesce(void);
void chp_proxy_exit(void);
int chp_proxy_lend(s32 cpu, s32 rep, u64 gen);
int chp_proxy_reclaim(s32 cpu, u64 gen);
int chp_fast_cpu(void);
void chp_proxy_request_reconcile(void);
void chp_proxy_reconcile(void);
void chp_proxy_reconcile_hotplug(unsigned int cpu, bool coming);
void chp_proxy_flush(void);
bool chp_proxy_end_lends(void);
u32 chp_proxy_nr_moved(void);
void chp_proxy_stats(struct chameleon_proxy_stats *st);
void chp_proxy_cpu_stats(int cpu, struct chameleon_proxy_cpu_stats *cs);

/* park.c: bulk, deferred hotplug */
int chp_park_init(void);
void chp_park_quiesce(void);
void chp_park_exit_online(void);
void chp_park_exit(void);
long chp_park(struct file *file, struct chameleon_proxy_park *arg,
	      const struct cpumask *mask);
long chp_unpark(struct file *file, struct chameleon_proxy_unpark *arg,
		const struct cpumask *mask);
bool chp_park_is_parked(int cpu);
u32 chp_park_undo_locked(u64 *found);
int chp_park_error(void);
void chp_park_cpu_online(unsigned int cpu);
void chp_park_stats(struct chameleon_proxy_stats *st);
void chp_park_cpu_stats(int cpu, struct chameleon_proxy_cpu_stats *cs);

/* emulate.c: duty-cycle emulation by idle injection */
int chp_emulate_init(void);
void chp_emulate_quiesce(void);
void chp_emulate_exit(void);
long chp_emulate(struct file *file, struct chameleon_proxy_emulate *arg);
int chp_emulate_speed(s32 cpu, u32 level);
bool chp_emulate_off(void);
void chp_emulate_flush(void);
void chp_emulate_cpu_online(unsigned int cpu);
void chp_emulate_stats(struct chameleon_proxy_stats *st);
void chp_emulate_cpu_stats(int cpu, struct chameleon_proxy_cpu_stats *cs);

/*
 * Exported (kernel/rcu/update.c, EXPORT_SYMBOL_GPL) but declared only in
 * kernel/rcu/rcu.h, which a module cannot include; used by park.c.
 */
void rcu_expedite_gp(void);
void rcu_unexpedite_gp(void);

/* kfuncs.c */
int chp_kfuncs_register(void);

/* latency.c: timing of the deferred IRQ work, for debugfs */
enum chp_lat_op {
	CHP_LAT_LEND,
	CHP_LAT_RECLAIM,
	CHP_LAT_NR_OPS,
};

int chp_latency_init(void);
void chp_latency_exit(void);
void chp_latency_record(enum chp_lat_op op, int cpu, u64 start_ns, u64 done_ns);
void chp_latency_skipped(enum chp_lat_op op);

#endif /* _CHAMELEON_PROXY_INTERNAL_H */
