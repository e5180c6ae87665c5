// SPDX-License-Identifier: GPL-2.0
/*
 * The loader of scx_floor (floor.bpf.c): attaches one of its two
 * schedulers, says when it is enabled, and detaches on SIGINT or SIGTERM,
 * as the bench's peers do (bench/guest/bench_lib.sh: start_peer,
 * stop_peer).
 *
 *   scx_floor | scx_floor_vtime
 *
 * The scheduler is the one the binary is named after: the bench starts a
 * peer by its name, with no arguments, so the two are two copies of this
 * one program.
 *
 * Exits 0 after a detach on a signal; 1 if the kernel ejected the
 * scheduler (its reason is printed) or it could not be loaded.
 */
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "floor.skel.h"

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* libbpf's own messages only when something goes wrong (warnings, errors). */
static int print_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	const char *name = basename(argv[0]);
	int vtime = strcmp(name, "scx_floor_vtime") == 0;
	struct bpf_map *use, *skip;
	struct bpf_link *link;
	struct floor_bpf *skel;
	struct sigaction sa;
	int err, ret = 0;

	if (argc > 1) {
		fprintf(stderr, "usage: scx_floor | scx_floor_vtime (no arguments)\n");
		return 2;
	}
	libbpf_set_print(print_libbpf);
	/* No SA_RESTART: the wait below must see the signal at once. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	skel = floor_bpf__open();
	if (!skel) {
		fprintf(stderr, "%s: open: %s\n", name, strerror(errno));
		return 1;
	}
	use = vtime ? skel->maps.floor_vtime_ops : skel->maps.floor_ops;
	skip = vtime ? skel->maps.floor_ops : skel->maps.floor_vtime_ops;
	/*
	 * The other scheduler's map is not created: libbpf then does not load
	 * the programs only that map refers to either.
	 */
	bpf_map__set_autocreate(skip, false);
	err = floor_bpf__load(skel);
	if (err) {
		fprintf(stderr, "%s: load: %s\n", name, strerror(-err));
		floor_bpf__destroy(skel);
		return 1;
	}
	link = bpf_map__attach_struct_ops(use);
	if (!link) {
		fprintf(stderr, "%s: attach: %s\n", name, strerror(errno));
		floor_bpf__destroy(skel);
		return 1;
	}
	/* The kernel has switched every task to the scheduler when attach returns. */
	printf("%s: enabled (ops %s)\n", name, bpf_map__name(use));
	fflush(stdout);

	while (!stop && !skel->bss->exit_kind) {
		struct timespec ts = { .tv_nsec = 100 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	if (skel->bss->exit_kind && !stop) {
		fprintf(stderr, "%s: ejected by the kernel (kind %d): %s: %s\n", name,
			skel->bss->exit_kind, skel->bss->exit_reason, skel->bss->exit_msg);
		ret = 1;
	}
	bpf_link__destroy(link);
	floor_bpf__destroy(skel);
	if (!ret)
		printf("%s: detached\n", name);
	return ret;
}
