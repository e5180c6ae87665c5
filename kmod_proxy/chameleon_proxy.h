/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * User interface of the chameleon_proxy module (/dev/chameleon_proxy).
 * Shared with the agent; every ioctl argument is versioned by its size.
 */
#ifndef _UAPI_CHAMELEON_PROXY_H
#define _UAPI_CHAMELEON_PROXY_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define CHAMELEON_PROXY_ABI_VERSION	1

struct chameleon_proxy_info {
	__u32 abi_version;	/* CHAMELEON_PROXY_ABI_VERSION */
	__u32 nr_cpu_ids;	/* size of the cpumasks the module accepts */
	__u64 features;		/* CHAMELEON_PROXY_F_* the module provides */
};

#define CHAMELEON_PROXY_IOC_MAGIC	0xC7
#define CHAMELEON_PROXY_IOC_INFO	_IOR(CHAMELEON_PROXY_IOC_MAGIC, 0, struct chameleon_proxy_info)

#endif /* _UAPI_CHAMELEON_PROXY_H */
