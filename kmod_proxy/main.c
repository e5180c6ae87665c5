// SPDX-License-Identifier: GPL-2.0
/*
 * chameleon_proxy: companion module of the scx_chameleon scheduler.
 *
 * It will provide processor proxies (route a borrowed CPU's device interrupts
 * to the CPU that borrows it) and Bolt-style bulk, deferred hotplug. This first
 * version sets up the user interface only: a misc device whose INFO ioctl
 * reports the ABI version and the features present, so the agent can detect
 * the module and refuse a mismatched one. The scheduler works without it.
 *
 * Every ioctl validates its command and argument and fails with an error code;
 * nothing a user passes can make the module touch kernel state it did not
 * check first.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/cpumask.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/uaccess.h>

#include "chameleon_proxy.h"

static long chameleon_proxy_ioctl(struct file *file, unsigned int cmd,
				  unsigned long arg)
{
	void __user *uarg = (void __user *)arg;

	switch (cmd) {
	case CHAMELEON_PROXY_IOC_INFO: {
		struct chameleon_proxy_info info = {
			.abi_version = CHAMELEON_PROXY_ABI_VERSION,
			.nr_cpu_ids = nr_cpu_ids,
			.features = 0,
		};

		if (copy_to_user(uarg, &info, sizeof(info)))
			return -EFAULT;
		return 0;
	}
	default:
		return -ENOTTY;
	}
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

	ret = misc_register(&chameleon_proxy_dev);
	if (ret) {
		pr_err("cannot register /dev/%s: %d\n", chameleon_proxy_dev.name, ret);
		return ret;
	}
	pr_info("loaded, ABI %d, %u CPU ids\n", CHAMELEON_PROXY_ABI_VERSION,
		nr_cpu_ids);
	return 0;
}

static void __exit chameleon_proxy_exit(void)
{
	misc_deregister(&chameleon_proxy_dev);
	pr_info("unloaded\n");
}

module_init(chameleon_proxy_init);
module_exit(chameleon_proxy_exit);

MODULE_DESCRIPTION("Processor proxies and fast hotplug for scx_chameleon");
MODULE_AUTHOR("scx_chameleon developers");
MODULE_LICENSE("GPL");
