// SPDX-License-Identifier: GPL-2.0
/*
 * The kfuncs the scx_chameleon BPF scheduler calls.
 *
 * They are registered for struct_ops and syscall programs, and a filter lets
 * only ours call them (chp_kfunc_filter()); the scheduler declares them
 * __ksym __weak and checks bpf_ksym_exists(), so it loads without this module
 * and then simply does without proxies and emulation. It should check
 * chameleon_proxy_abi() too.
 *
 * The filter judges a program once, at load; the owner it judged by may go,
 * and another claim the module, while the program lives on (a scheduler
 * being unloaded after its agent died, a program pinned in bpffs). So every
 * kfunc that changes the state takes, last, the owner generation its caller
 * was loaded under (CLAIM's answer, a constant of the program's), and does
 * nothing but return -ENODEV unless it is the current owner's (owner.c,
 * "Generations").
 *
 * They are called from the scheduler's callbacks, mostly with a runqueue lock
 * held and interrupts off, possibly in hard interrupt context (ops.tick):
 * they never sleep, allocate or wake anything up. The slow part of their work
 * is deferred through an irq_work to a work item (see main.c).
 *
 * A loaded BPF program that calls module kfuncs holds a reference on the
 * module: rmmod fails with EBUSY until the scheduler is unloaded. That is by
 * design; it is also what guarantees no kfunc runs during module exit.
 */
#include <linux/bpf.h>
#include <linux/btf.h>
#include <linux/btf_ids.h>
#include <linux/module.h>
#include <linux/string.h>

#include "internal.h"

__bpf_kfunc_start_defs();

/**
 * chameleon_proxy_lend - lend a CPU to a representative
 * @cpu: the CPU lent
 * @rep: the CPU it is lent to
 * @gen: the owner generation the caller was loaded under (CLAIM's)
 *
 * Its device interrupts move off @cpu shortly after (to the rest of their
 * affinity, or to @rep), and its interruptions are counted until
 * chameleon_proxy_reclaim().
 *
 * Return: 0, -EINVAL for bad CPU ids or @cpu == @rep, -ENODEV if @gen is not
 * the current owner's (the owner the caller was loaded under is gone, and
 * another may own the module now), -EBUSY if @cpu is already lent, parked or
 * offline, or @rep offline.
 */
__bpf_kfunc int chameleon_proxy_lend(s32 cpu, s32 rep, u64 gen)
{
	return chp_proxy_lend(cpu, rep, gen);
}

/**
 * chameleon_proxy_reclaim - end the lend of a CPU
 * @cpu: the CPU lent
 * @gen: as for chameleon_proxy_lend()
 *
 * Return: 0, -EINVAL for a bad CPU id, -ENODEV as for chameleon_proxy_lend()
 * (the release of that owner ended its lends), -ENOENT if @cpu is not lent.
 */
__bpf_kfunc int chameleon_proxy_reclaim(s32 cpu, u64 gen)
{
	return chp_proxy_reclaim(cpu, gen);
}

/**
 * chameleon_proxy_speed - set the emulated speed of a CPU
 * @cpu: the CPU
 * @level: 0 for a plain CPU, 1 for the representative of 2 fused CPUs, 2 for
 *	   the representative of 4
 * @gen: as for chameleon_proxy_lend()
 *
 * Takes effect shortly after, if the emulation is on (EMULATE ioctl).
 *
 * Return: 0, -ENODEV as for chameleon_proxy_lend(), -EINVAL for a bad CPU id
 * or level.
 */
__bpf_kfunc int chameleon_proxy_speed(s32 cpu, u32 level, u64 gen)
{
	/*
	 * Checked before the level is stored, not with it: a release between
	 * the two leaves a level for the emulation, which the release switched
	 * off, and which the next owner's EMULATE starts from until its own
	 * scheduler sets the CPU's level.
	 */
	if (!chp_owner_admits(gen))
		return -ENODEV;
	return chp_emulate_speed(cpu, level);
}

/**
 * chameleon_proxy_abi - the module's ABI version
 *
 * Return: CHAMELEON_PROXY_ABI_VERSION.
 */
__bpf_kfunc u32 chameleon_proxy_abi(void)
{
	return CHAMELEON_PROXY_ABI_VERSION;
}

__bpf_kfunc_end_defs();

BTF_KFUNCS_START(chp_kfunc_ids)
BTF_ID_FLAGS(func, chameleon_proxy_lend)
BTF_ID_FLAGS(func, chameleon_proxy_reclaim)
BTF_ID_FLAGS(func, chameleon_proxy_speed)
BTF_ID_FLAGS(func, chameleon_proxy_abi)
BTF_KFUNCS_END(chp_kfunc_ids)

/*
 * Who may call the kfuncs: the verifier asks, for each call it finds reachable
 * in a program being loaded, in the loader's context (kernel/bpf/btf.c: the
 * filters of the module BTF's hook). The ioctls that change the same state
 * need CAP_SYS_ADMIN and the ownership of the device; a program loaded by
 * anyone with CAP_BPF must not get around that. So: a sched_ext scheduler, or
 * a syscall program (the agent's park request), loaded by the process that
 * owns the device (owner.c). A sched_ext scheduler loaded by the owner is
 * ours: only one can be enabled at a time. Anything else is refused with
 * -EACCES at load ("calling kernel function ... is not allowed"). What a
 * program admitted here may still do once its owner is gone: see the top.
 *
 * sched_ext's struct_ops is the one built into the kernel: registered with no
 * owning module, so in vmlinux's BTF (__register_bpf_struct_ops() files a
 * struct_ops under its owner's BTF, and a program is verified against the one
 * of the BTF its attach type comes from). A module may register a struct_ops
 * of the same name in its own BTF; its programs are not schedulers.
 */
static int chp_kfunc_filter(const struct bpf_prog *prog, u32 kfunc_id)
{
	const struct bpf_struct_ops *st_ops;

	switch (prog->type) {
	case BPF_PROG_TYPE_STRUCT_OPS:
		/* Set by the verifier before it checks calls, since 6.15. */
		st_ops = prog->aux->st_ops;
		if (!st_ops || st_ops->owner ||
		    strcmp(st_ops->name, "sched_ext_ops"))
			return -EACCES;
		break;
	case BPF_PROG_TYPE_SYSCALL:
		break;
	default:
		return -EACCES;
	}
	return chp_owner_is_current() ? 0 : -EACCES;
}

static const struct btf_kfunc_id_set chp_kfunc_set = {
	.owner	= THIS_MODULE,
	.set	= &chp_kfunc_ids,
	.filter	= chp_kfunc_filter,
};

/*
 * For the scheduler's callbacks, and for its syscall programs (the agent's
 * park request splits objects through BPF_PROG_RUN, in process context).
 * There is no unregistering: the sets go away with the module's BTF.
 */
int chp_kfuncs_register(void)
{
	return register_btf_kfunc_id_set(BPF_PROG_TYPE_STRUCT_OPS,
					 &chp_kfunc_set) ?:
	       register_btf_kfunc_id_set(BPF_PROG_TYPE_SYSCALL,
					 &chp_kfunc_set);
}
