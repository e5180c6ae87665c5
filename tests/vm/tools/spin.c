// SPDX-License-Identifier: GPL-2.0
/*
 * spin: a CPU-bound task for the VM tests.
 *   spin [-c CPU] [-g CGROUP_DIR] [-b RUN_MS:SLEEP_MS] [-n NICE] [-f RT_PRIO]
 *        [-D RUNTIME_MS:PERIOD_MS] [-F MS] [-M] [-N NAME] SECONDS
 * Optionally pins itself to CPU and moves itself into CGROUP_DIR (so that it
 * is tagged), then burns CPU for SECONDS of wall time (with -b: in bursts of
 * RUN_MS separated by sleeps of SLEEP_MS, a bursty task; -n sets its nice
 * value, -f makes it SCHED_FIFO at RT_PRIO, -D SCHED_DEADLINE with that
 * runtime each period (deadline = period), -N renames it, before it joins
 * the cgroup; -F, with -f, sleeps a millisecond so that it is switched in as a
 * real-time task, then drops back to SCHED_OTHER after MS ms while it runs,
 * as the agent does once attached; -M burns the CPU inside the kernel with
 * migration disabled: BPF_PROG_TEST_RUN of a two-instruction socket filter,
 * whose run loop is preemptible between migrate_disable() and
 * migrate_enable(), so that almost every preemption, slice end included,
 * finds the task unable to move) and prints
 * "spin pid=P seconds=S loops=N" (N: work done, for speed comparisons).
 * SIGUSR1 prints "spin pid=P mark loops=N" (the work done so far) at once,
 * so that a bench can take the work over a window of its own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

/* The uapi's struct sched_attr (glibc has no wrapper for sched_setattr). */
struct dl_attr {
	unsigned int size;
	unsigned int sched_policy;
	unsigned long long sched_flags;
	int sched_nice;
	unsigned int sched_priority;
	unsigned long long sched_runtime;
	unsigned long long sched_deadline;
	unsigned long long sched_period;
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * -M: a socket filter that returns 0, loaded once; each call runs it
 * @repeat times in the kernel (bpf_test_run(): migration disabled, preemption
 * enabled, the loop yields only where need_resched() is seen).
 */
static int md_prog = -1;

static int md_load(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	a.insns = (unsigned long)insns;
	a.insn_cnt = 2;
	a.license = (unsigned long)"GPL";
	md_prog = syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a));
	return md_prog;
}

static int md_run(unsigned int repeat)
{
	unsigned char pkt[64] = { 0 };
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.test.prog_fd = md_prog;
	a.test.data_in = (unsigned long)pkt;
	a.test.data_size_in = sizeof(pkt);
	a.test.repeat = repeat;
	/* A signal (SIGUSR1's mark) ends a run early: EINTR is no error. */
	if (syscall(SYS_bpf, BPF_PROG_TEST_RUN, &a, sizeof(a)) && errno != EINTR)
		return -1;
	return 0;
}

static volatile sig_atomic_t marked;

static void on_usr1(int sig)
{
	(void)sig;
	marked = 1;
}

int main(int argc, char **argv)
{
	const char *cgroup = NULL;
	unsigned long long loops = 0;
	volatile unsigned long long sink = 0;
	double secs, end;
	int opt, cpu = -1, run_ms = 0, sleep_ms = 0, nice_val = 0, rt_prio = 0;
	int set_nice = 0, dl_run_ms = 0, dl_period_ms = 0, rt_drop_ms = 0, in_kernel = 0;
	double burst_end = 0, rt_drop_at = 0;
	char *tail;

	while ((opt = getopt(argc, argv, "c:g:b:n:f:D:F:MN:")) != -1) {
		switch (opt) {
		case 'N': prctl(PR_SET_NAME, optarg, 0, 0, 0); break;
		case 'c': cpu = atoi(optarg); break;
		case 'g': cgroup = optarg; break;
		case 'n': nice_val = atoi(optarg); set_nice = 1; break;
		case 'f': rt_prio = atoi(optarg); break;
		case 'F': rt_drop_ms = atoi(optarg); break;
		case 'M': in_kernel = 1; break;
		case 'b':
			if (sscanf(optarg, "%d:%d", &run_ms, &sleep_ms) != 2 ||
			    run_ms <= 0 || sleep_ms < 0) {
				fprintf(stderr, "spin: bad -b '%s' (RUN_MS:SLEEP_MS)\n", optarg);
				return 2;
			}
			break;
		case 'D':
			if (sscanf(optarg, "%d:%d", &dl_run_ms, &dl_period_ms) != 2 ||
			    dl_run_ms <= 0 || dl_period_ms < dl_run_ms) {
				fprintf(stderr, "spin: bad -D '%s' (RUNTIME_MS:PERIOD_MS)\n", optarg);
				return 2;
			}
			break;
		default:
			fprintf(stderr, "usage: spin [-c CPU] [-g CGROUP_DIR] [-b RUN_MS:SLEEP_MS] [-n NICE] [-f RT_PRIO] [-D RUNTIME_MS:PERIOD_MS] [-F MS] [-M] [-N NAME] SECONDS\n");
			return 2;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: spin [-c CPU] [-g CGROUP_DIR] [-b RUN_MS:SLEEP_MS] [-n NICE] [-f RT_PRIO] [-D RUNTIME_MS:PERIOD_MS] [-F MS] [-M] [-N NAME] SECONDS\n");
		return 2;
	}
	secs = strtod(argv[optind], &tail);
	if (*tail || secs <= 0) {
		fprintf(stderr, "spin: bad SECONDS '%s'\n", argv[optind]);
		return 2;
	}
	if (cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(cpu, &set);
		if (sched_setaffinity(0, sizeof(set), &set)) {
			fprintf(stderr, "spin: pin to cpu %d: %s\n", cpu, strerror(errno));
			return 1;
		}
	}
	if (cgroup) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/cgroup.procs", cgroup);
		f = fopen(path, "w");
		if (!f || fprintf(f, "0\n") < 0 || fclose(f)) {
			fprintf(stderr, "spin: join %s: %s\n", cgroup, strerror(errno));
			return 1;
		}
	}
	if (set_nice && setpriority(PRIO_PROCESS, 0, nice_val)) {
		fprintf(stderr, "spin: nice %d: %s\n", nice_val, strerror(errno));
		return 1;
	}
	if (rt_prio > 0) {
		struct sched_param sp = { .sched_priority = rt_prio };

		if (sched_setscheduler(0, SCHED_FIFO, &sp)) {
			fprintf(stderr, "spin: SCHED_FIFO %d: %s\n", rt_prio, strerror(errno));
			return 1;
		}
	}
	if (rt_drop_ms > 0 && rt_prio > 0) {
		usleep(1000);
		rt_drop_at = now() + rt_drop_ms / 1e3;
	}
	if (dl_run_ms) {
		struct dl_attr a = {
			.size = sizeof(a),
			.sched_policy = SCHED_DEADLINE,
			.sched_runtime = dl_run_ms * 1000000ULL,
			.sched_deadline = dl_period_ms * 1000000ULL,
			.sched_period = dl_period_ms * 1000000ULL,
		};

		if (syscall(SYS_sched_setattr, 0, &a, 0)) {
			fprintf(stderr, "spin: SCHED_DEADLINE %d:%d: %s\n", dl_run_ms, dl_period_ms,
				strerror(errno));
			return 1;
		}
	}
	if (in_kernel && md_load() < 0) {
		fprintf(stderr, "spin: load a socket filter for -M: %s\n", strerror(errno));
		return 1;
	}
	signal(SIGUSR1, on_usr1);
	end = now() + secs;
	burst_end = now() + run_ms / 1e3;
	while (now() < end) {
		if (rt_drop_at && now() >= rt_drop_at) {
			struct sched_param sp = { .sched_priority = 0 };

			if (sched_setscheduler(0, SCHED_OTHER, &sp)) {
				fprintf(stderr, "spin: back to SCHED_OTHER: %s\n", strerror(errno));
				return 1;
			}
			rt_drop_at = 0;
		}
		if (run_ms && now() >= burst_end) {
			usleep(sleep_ms * 1000);
			burst_end = now() + run_ms / 1e3;
		}
		if (in_kernel) {
			if (md_run(2000)) {
				fprintf(stderr, "spin: BPF_PROG_TEST_RUN: %s\n", strerror(errno));
				return 1;
			}
		} else {
			for (int i = 0; i < 100000; i++)
				sink += i;
		}
		loops++;
		if (marked) {
			marked = 0;
			printf("spin pid=%d mark loops=%llu\n", getpid(), loops);
			fflush(stdout);
		}
	}
	printf("spin pid=%d seconds=%g loops=%llu\n", getpid(), secs, loops);
	return 0;
}
