// SPDX-License-Identifier: GPL-2.0
/*
 * cpu_share MS WHAT...: shares of the next MS milliseconds of CLOCK_MONOTONIC,
 * in tenths of a percent of that window, one line per WHAT:
 *   PID   the CPU time the kernel accounted to the task
 *         (/proc/PID/schedstat, first field);
 *   cpuN  the time CPU N spent idle (/proc/stat, idle + iowait);
 *   runN  the time tasks ran on CPU N (/proc/schedstat, rq_cpu_time: the
 *         run time of every task but the idle task, summed as each leaves
 *         the CPU), which does not rest on idle accounting. On 6.16-7.0
 *         the idle of a CPU whose queue holds a waiting task but that runs
 *         nothing (a lent CPU) sometimes stops accruing: its idle and its
 *         tasks' time then add up to far less than the window.
 *   rest  the CPU time of every other thread (every /proc/PID/task/TID
 *         but the PIDs named): the agent, the shell, kernel threads. A
 *         test that pins one task per CPU reads what else could have run
 *         beside it. A thread that exits inside the window is left out, one
 *         born inside it counts whole; read just outside the window's ends.
 *
 * One process reads the clock and every counter back to back at both ends, so
 * the window is exact to microseconds; a shell doing the same with a fork per
 * read was off by up to 4 % under TCG.
 *
 * Idle is a share of the clock's window, never of /proc/stat's own total: with
 * NOHZ the idle field is accounted by clock (at idle entry and exit), while
 * the busy fields are tick samples, and TCG loses ticks of a busy vCPU (a busy
 * CPU's total grew 94 jiffies in a 3 s window), which made an idle share of
 * the total read far too high (71 % against 47 %).
 *
 * Exit 1 (and nothing on stdout) when a task or CPU cannot be read at either
 * end: a task that ended inside the window measured something else.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_ITEMS 16
#define MAX_THREADS 8192

struct thread_ns {
	long tid;
	long long ns;
};

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long run_ns(const char *pid)
{
	char path[64];
	long long ns = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%s/schedstat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &ns) != 1)
		ns = -1;
	fclose(f);
	return ns;
}

/* Idle + iowait of CPU `cpu` in ns, -1 if it has no line (offline). */
static long long idle_ns(const char *cpu)
{
	unsigned long long v[5];
	char line[512], name[32];
	long long ns = -1;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f = fopen("/proc/stat", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%31s %llu %llu %llu %llu %llu", name, &v[0], &v[1],
			   &v[2], &v[3], &v[4]) == 6 && !strcmp(name, cpu)) {
			ns = (long long)((v[3] + v[4]) * (1000000000ULL / hz));
			break;
		}
	}
	fclose(f);
	return ns;
}

/* rq_cpu_time of CPU N (`run` N) in ns, -1 if it has no line (offline). */
static long long cpu_run_ns(const char *what)
{
	unsigned long long v[7];
	char line[512], name[32], want[32];
	long long ns = -1;
	FILE *f = fopen("/proc/schedstat", "r");

	if (!f)
		return -1;
	snprintf(want, sizeof(want), "cpu%s", what + 3);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%31s %llu %llu %llu %llu %llu %llu %llu", name, &v[0], &v[1],
			   &v[2], &v[3], &v[4], &v[5], &v[6]) == 8 && !strcmp(name, want)) {
			ns = (long long)v[6];
			break;
		}
	}
	fclose(f);
	return ns;
}

/* The first field of every thread's schedstat, threads of `skip` excluded. */
static int all_threads(struct thread_ns *t, char **skip, int nskip)
{
	char path[600];
	struct dirent *p, *e;
	DIR *proc, *task;
	int n = 0, i;
	FILE *f;

	proc = opendir("/proc");
	if (!proc)
		return -1;
	while ((p = readdir(proc)) && n < MAX_THREADS) {
		if (p->d_name[0] < '0' || p->d_name[0] > '9')
			continue;
		for (i = 0; i < nskip && strcmp(skip[i], p->d_name); i++)
			;
		if (i < nskip)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task", p->d_name);
		task = opendir(path);
		if (!task)
			continue;
		while ((e = readdir(task)) && n < MAX_THREADS) {
			if (e->d_name[0] < '0' || e->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%s/task/%s/schedstat",
				 p->d_name, e->d_name);
			f = fopen(path, "r");
			if (!f)
				continue;
			if (fscanf(f, "%lld", &t[n].ns) == 1)
				t[n++].tid = atol(e->d_name);
			fclose(f);
		}
		closedir(task);
	}
	closedir(proc);
	return n;
}

/* What the threads in `b` ran since `a` (a thread new in `b` counts whole). */
static long long threads_delta(struct thread_ns *a, int na, struct thread_ns *b, int nb)
{
	long long sum = 0;
	int i, j;

	for (j = 0; j < nb; j++) {
		for (i = 0; i < na && a[i].tid != b[j].tid; i++)
			;
		sum += b[j].ns - (i < na ? a[i].ns : 0);
	}
	return sum;
}

static long long sample(const char *what)
{
	if (!strncmp(what, "run", 3))
		return cpu_run_ns(what);
	return strncmp(what, "cpu", 3) ? run_ns(what) : idle_ns(what);
}

int main(int argc, char **argv)
{
	static struct thread_ns th0[MAX_THREADS], th1[MAX_THREADS];
	long long v0[MAX_ITEMS], v1[MAX_ITEMS], t0, t1;
	int i, n = argc - 2, rest = -1, nth0 = 0, nth1 = 0;
	struct timespec nap;
	long ms;

	if (argc < 3 || n > MAX_ITEMS || (ms = atol(argv[1])) <= 0) {
		fprintf(stderr, "usage: cpu_share MS PID|cpuN|runN|rest... (at most %d)\n",
			MAX_ITEMS);
		return 2;
	}
	for (i = 0; i < n; i++)
		if (!strcmp(argv[i + 2], "rest"))
			rest = i;
	/* Reading every thread takes long under TCG: outside the exact window. */
	if (rest >= 0)
		nth0 = all_threads(th0, argv + 2, n);
	t0 = now_ns();
	for (i = 0; i < n; i++)
		v0[i] = i == rest ? nth0 : sample(argv[i + 2]);
	nap.tv_sec = ms / 1000;
	nap.tv_nsec = ms % 1000 * 1000000;
	nanosleep(&nap, NULL);
	for (i = 0; i < n; i++)
		v1[i] = i == rest ? 0 : sample(argv[i + 2]);
	t1 = now_ns();
	if (rest >= 0) {
		nth1 = all_threads(th1, argv + 2, n);
		v1[rest] = nth1 < 0 ? -1 : threads_delta(th0, nth0, th1, nth1);
		v0[rest] = nth0 < 0 ? -1 : 0;
	}
	for (i = 0; i < n; i++) {
		if (v0[i] < 0 || v1[i] < 0) {
			fprintf(stderr, "cpu_share: cannot read %s at both ends\n", argv[i + 2]);
			return 1;
		}
	}
	for (i = 0; i < n; i++)
		printf("%lld\n", (v1[i] - v0[i]) * 1000 / (t1 - t0));
	return 0;
}
