/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * User interface of the chameleon_proxy module (/dev/chameleon_proxy).
 * Shared with the agent and the test tools.
 *
 * Versioning: every ioctl argument is a struct whose size is encoded in the
 * command number. The module accepts any size at least as large as the first
 * version of that struct: bytes it does not know must be zero on input
 * (-E2BIG otherwise) and are cleared on output, so an older or newer caller
 * keeps working as long as it leaves new fields zero. All fields are naturally
 * aligned fixed-width integers, so 32- and 64-bit callers share one layout.
 *
 * Every field marked "in: 0" or "reserved" must be zero, unknown flags are
 * refused with -EINVAL. CPU masks are arrays of __u64 words, bit N of the mask
 * being bit (N % 64) of word N / 64, with exactly (nr_cpu_ids + 63) / 64 words
 * (nr_cpu_ids comes from INFO) and no bit set at or past nr_cpu_ids.
 *
 * INFO and STATS only read and need no capability beyond opening the device;
 * CLAIM, PARK, UNPARK, EMULATE and RESET need CAP_SYS_ADMIN.
 *
 * Ownership: the module's state (parked CPUs, lent CPUs and the IRQs moved
 * off them, emulation) belongs to one open file, its owner: the one that sent
 * CLAIM, or the first PARK, UNPARK, EMULATE or RESET while there was none.
 * PARK, UNPARK, EMULATE and RESET from any other file fail with -EACCES once
 * their argument has been checked. When the owner's file is released (closed,
 * or its process killed), the module undoes everything: parks not done yet are
 * cancelled, CPUs it took offline come back online, every lend ends, every
 * moved IRQ gets its affinity back and the emulation stops. Only the owner's
 * process may load a BPF program calling the chameleon_proxy_* kfuncs, and
 * such a program's lend, reclaim and speed calls are refused (-ENODEV) once
 * the owner it was loaded under is gone, even after another file claimed
 * the module.
 *
 * ABI 4: each ownership has a generation, never 0 and never the same twice,
 * which CLAIM returns; chameleon_proxy_lend(), _reclaim() and _speed() take
 * it as their last argument and do nothing unless it is the current owner's.
 * The owner's programs carry the one of the CLAIM made before they were
 * loaded, as a constant (.rodata, frozen at load).
 */
#ifndef _UAPI_CHAMELEON_PROXY_H
#define _UAPI_CHAMELEON_PROXY_H

#include <linux/const.h>
#include <linux/ioctl.h>
#include <linux/types.h>

#define CHAMELEON_PROXY_ABI_VERSION	4

/* INFO.features */
#define CHAMELEON_PROXY_F_KFUNCS	_BITULL(0)	/* chameleon_proxy_* kfuncs */
#define CHAMELEON_PROXY_F_PARK		_BITULL(1)	/* PARK, UNPARK */
#define CHAMELEON_PROXY_F_EMULATE	_BITULL(2)	/* EMULATE */
#define CHAMELEON_PROXY_F_STATS		_BITULL(3)	/* STATS, RESET */
#define CHAMELEON_PROXY_F_OWNER		_BITULL(4)	/* CLAIM, undone on release */

struct chameleon_proxy_info {
	__u32 abi_version;	/* CHAMELEON_PROXY_ABI_VERSION */
	__u32 nr_cpu_ids;	/* size of the cpumasks the module accepts */
	__u64 features;		/* CHAMELEON_PROXY_F_* the module provides */
};

/* Longest PARK hold-off accepted, in ms. */
#define CHAMELEON_PROXY_MAX_HOLDOFF_MS	3600000

/*
 * PARK: the CPUs of the mask stop receiving device interrupts at once and are
 * taken offline after holdoff_ms, unless UNPARK comes first. Refused with
 * -EINVAL for CPU 0, a non-present CPU or a mask that would leave no online
 * CPU unparked, -EBUSY for a CPU already parked or offline, -EOPNOTSUPP for a
 * CPU the platform cannot unplug.
 */
struct chameleon_proxy_park {
	__u64 mask;		/* in: user address of the __u64 mask words */
	__u32 mask_words;	/* in: (nr_cpu_ids + 63) / 64 */
	__u32 holdoff_ms;	/* in: delay before offlining, 0 = at once */
	__u64 flags;		/* in: 0 */
	__u64 critical_ns;	/* out: time spent in the synchronous part */
	__u64 reserved[4];	/* in: 0 */
};

/*
 * UNPARK: parked CPUs not offline yet are back at once; the ones this module
 * offlined are brought back online by a worker (see STATS for its latency).
 * -EINVAL for a CPU that is not parked.
 */
struct chameleon_proxy_unpark {
	__u64 mask;		/* in: user address of the __u64 mask words */
	__u32 mask_words;	/* in: (nr_cpu_ids + 63) / 64 */
	__u32 flags;		/* in: 0 */
	__u64 critical_ns;	/* out: time spent in the synchronous part */
	__u64 reserved[4];	/* in: 0 */
};

/* EMULATE.category: how much faster a fused representative is emulated. */
#define CHAMELEON_PROXY_CAT_LOW		0
#define CHAMELEON_PROXY_CAT_MED		1
#define CHAMELEON_PROXY_CAT_HIGH	2

/*
 * EMULATE: duty-cycle emulation of fused processors by idle injection.
 * -EBUSY if another user (e.g. intel_powerclamp) already injects idle time.
 */
struct chameleon_proxy_emulate {
	__u32 on;		/* in: 0 = off, 1 = on */
	__u32 category;		/* in: CHAMELEON_PROXY_CAT_*, 0 when off */
	__u64 flags;		/* in: 0 */
	__u64 reserved[4];	/* in: 0 */
};

/* chameleon_proxy_cpu_stats.flags */
#define CHAMELEON_PROXY_CPU_ONLINE	_BITUL(0)
#define CHAMELEON_PROXY_CPU_PARKED	_BITUL(1)
#define CHAMELEON_PROXY_CPU_PENDING	_BITUL(2)	/* parked, not offline yet */
#define CHAMELEON_PROXY_CPU_OFFLINED	_BITUL(3)	/* offlined by this module */

/* What CLAIM found left behind by no owner, and undid. */
#define CHAMELEON_PROXY_FOUND_PARKED	_BITULL(0)	/* parked CPUs */
#define CHAMELEON_PROXY_FOUND_OFFLINED	_BITULL(1)	/* CPUs we took offline */
#define CHAMELEON_PROXY_FOUND_LENT	_BITULL(2)	/* lent CPUs */
#define CHAMELEON_PROXY_FOUND_IRQS	_BITULL(3)	/* IRQs off their affinity */
#define CHAMELEON_PROXY_FOUND_EMULATING	_BITULL(4)	/* idle injection on */

/*
 * CLAIM: the calling file becomes the owner (see the top of this file).
 * -EBUSY if another open file owns the module. Waits for the cleanup of a
 * previous owner's release to finish, then undoes whatever is still left (a
 * cleanup step that failed, state made with no owner) and says what it was.
 * Claiming again from the owner's file changes nothing and finds nothing.
 * The wait ends with -EINTR on a fatal signal (the cleanup goes on).
 */
struct chameleon_proxy_claim {
	__u64 flags;		/* in: 0 */
	__u64 found;		/* out: CHAMELEON_PROXY_FOUND_* */
	__u32 nr_offlined;	/* out: CPUs brought back online */
	__u32 nr_irqs;		/* out: IRQs given their affinity back */
	__u64 generation;	/* out: this ownership's, for the kfuncs */
	__u64 reserved[3];	/* in: 0 */
};

struct chameleon_proxy_cpu_stats {
	__s32 proxied_by;	/* representative this CPU is lent to, or -1 */
	__u32 flags;		/* CHAMELEON_PROXY_CPU_* */
	__u32 nr_proxying;	/* CPUs lent to this one */
	__u32 duty_pm;		/* emulated runnable share (per mille), 0 = not emulated */
	__u32 level;		/* last chameleon_proxy_speed() level */
	__s32 idle_adjust_us;	/* emulation: idle period correction (timer lag) */
	/* Interruptions counted while the CPU was lent, over finished lends */
	__u64 irqs;		/* device interrupts */
	__u64 softirqs;
	__u64 ipis;		/* function call, reschedule, TLB shootdown */
	__u64 timers;		/* local timer interrupts */
	/* The same, during the current lend (0 when not lent) */
	__u64 live_irqs;
	__u64 live_softirqs;
	__u64 live_ipis;
	__u64 live_timers;
};

struct chameleon_proxy_stats {
	__u64 cpus;		/* in: user address of cpu_stats[nr_cpus], or 0 */
	__u32 nr_cpus;		/* in: nr_cpu_ids, or 0 with cpus == 0 */
	__u32 cpu_size;		/* in: sizeof(struct chameleon_proxy_cpu_stats) */
	__u64 flags;		/* in: 0 */

	/* Processor proxies */
	__u64 lends;
	__u64 lends_refused;
	__u64 reclaims;
	__u64 reclaims_refused;
	__u64 redirects_applied;	/* IRQs moved off lent or parked CPUs */
	__u64 redirects_skipped;	/* lends reclaimed before any redirect */
	__u64 restores;			/* IRQs given their affinity back */
	__u64 irq_failures;		/* irq_set_affinity() errors */
	__u64 managed_skipped;		/* kernel-managed IRQs left alone */
	__s32 irq_last_error;
	__u32 irqs_moved;		/* IRQs away from their affinity now */

	/* Parking */
	__u64 parks;
	__u64 unparks;
	__u64 remove_cpu_calls;
	__u64 remove_cpu_failures;
	__u64 add_cpu_calls;
	__u64 add_cpu_failures;
	__s32 remove_cpu_last_error;
	__s32 add_cpu_last_error;
	__u64 park_critical_ns;		/* last PARK's synchronous part */
	__u64 park_physical_ns;		/* last PARK call to its last offline */
	__u64 unpark_critical_ns;	/* last UNPARK's synchronous part */
	__u64 unpark_physical_ns;	/* last UNPARK call to its last online */

	/* Emulation */
	__u32 emulate_on;
	__u32 emulate_category;
	__u64 emulate_failures;		/* CPUs idle injection could not cover */

	/* Ownership */
	__u32 owner_pid;		/* tgid of the owner's opener, 0: none */
	__u32 releases;			/* owners released (cleanups queued) */
	__u64 cleanup_ns;		/* last release to the end of its cleanup */

	/* Emulation: CPUs with an idle_inject device registered now */
	__u32 emulate_devices;
	__u32 reserved32;
	__u64 reserved[5];
};

#define CHAMELEON_PROXY_IOC_MAGIC	0xC7
#define CHAMELEON_PROXY_IOC_INFO \
	_IOR(CHAMELEON_PROXY_IOC_MAGIC, 0, struct chameleon_proxy_info)
#define CHAMELEON_PROXY_IOC_PARK \
	_IOWR(CHAMELEON_PROXY_IOC_MAGIC, 1, struct chameleon_proxy_park)
#define CHAMELEON_PROXY_IOC_UNPARK \
	_IOWR(CHAMELEON_PROXY_IOC_MAGIC, 2, struct chameleon_proxy_unpark)
#define CHAMELEON_PROXY_IOC_EMULATE \
	_IOW(CHAMELEON_PROXY_IOC_MAGIC, 3, struct chameleon_proxy_emulate)
#define CHAMELEON_PROXY_IOC_STATS \
	_IOWR(CHAMELEON_PROXY_IOC_MAGIC, 4, struct chameleon_proxy_stats)
/*
 * RESET: reclaim every lent CPU, unpark every CPU, emulation off. arg 0.
 * Waits for it to be done; -EINTR on a fatal signal (it goes on).
 */
#define CHAMELEON_PROXY_IOC_RESET	_IO(CHAMELEON_PROXY_IOC_MAGIC, 5)
#define CHAMELEON_PROXY_IOC_CLAIM \
	_IOWR(CHAMELEON_PROXY_IOC_MAGIC, 6, struct chameleon_proxy_claim)

#endif /* _UAPI_CHAMELEON_PROXY_H */
