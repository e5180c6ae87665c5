// SPDX-License-Identifier: GPL-2.0
/*
 * insn_mark: open and close the insn_cost plugin's counting windows
 * (bench/insn_cost/plugin.c) by executing cpuid with a leaf the plugin
 * recognises, the window's id (1..63) in ecx. Without the plugin it is an
 * ordinary cpuid of an unknown leaf: harmless.
 *
 *   insn_mark start|stop ID
 *   insn_mark run ID REPORT CMD [ARGS...]
 *
 * run: every BPF program's run_cnt (bpf_stats) read just before the window
 * opens, CMD run in it, run_cnt read again just after it closes, so that
 * the two counts cover the same calls as the window (a shell reading
 * bpftool around the markers adds its own forks and switches: 5-10 % more
 * calls). REPORT gets "INSN time ID SECONDS" and "INSN runcnt ID TAG NAME
 * DELTA" for each program that ran; the exit status is CMD's.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define INSN_COST_START 0x43484d53u /* "CHMS" */
#define INSN_COST_STOP 0x43484d45u  /* "CHME" */
#define MAX_PROGS 4096

struct prog {
	int fd;
	__u64 cnt0;
	__u8 tag[BPF_TAG_SIZE];
	char name[BPF_OBJ_NAME_LEN];
};

static struct prog progs[MAX_PROGS];
static int nr_progs;

static void mark(unsigned int leaf, unsigned int id)
{
	unsigned int a = leaf, b, c = id, d;

	__asm__ volatile("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
}

static long sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(__NR_bpf, cmd, attr, sizeof(*attr));
}

static int info(struct prog *p, struct bpf_prog_info *i)
{
	union bpf_attr attr;

	memset(i, 0, sizeof(*i));
	memset(&attr, 0, sizeof(attr));
	attr.info.bpf_fd = p->fd;
	attr.info.info_len = sizeof(*i);
	attr.info.info = (__u64)(uintptr_t)i;
	return sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &attr);
}

/* An fd for every program loaded now (the slow part, before the window). */
static void open_progs(void)
{
	union bpf_attr attr;
	__u32 id = 0;

	while (nr_progs < MAX_PROGS) {
		memset(&attr, 0, sizeof(attr));
		attr.start_id = id;
		if (sys_bpf(BPF_PROG_GET_NEXT_ID, &attr))
			break;
		id = attr.next_id;
		memset(&attr, 0, sizeof(attr));
		attr.prog_id = id;
		progs[nr_progs].fd = sys_bpf(BPF_PROG_GET_FD_BY_ID, &attr);
		if (progs[nr_progs].fd >= 0)
			nr_progs++;
	}
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int run(unsigned int id, const char *report, char **cmd)
{
	struct bpf_prog_info i;
	double t0, t1;
	int status, k, j;
	FILE *out;
	pid_t pid;

	out = fopen(report, "w");
	if (!out) {
		perror(report);
		return 2;
	}
	open_progs();
	for (k = 0; k < nr_progs; k++) {
		if (info(&progs[k], &i)) {
			progs[k].fd = -1;
			continue;
		}
		progs[k].cnt0 = i.run_cnt;
		memcpy(progs[k].tag, i.tag, sizeof(i.tag));
		memcpy(progs[k].name, i.name, sizeof(i.name));
		progs[k].name[sizeof(progs[k].name) - 1] = 0;
	}
	fflush(NULL);
	t0 = now();
	mark(INSN_COST_START, id);
	pid = fork();
	if (pid == 0) {
		execvp(cmd[0], cmd);
		perror(cmd[0]);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0)
		status = 2 << 8;
	mark(INSN_COST_STOP, id);
	t1 = now();
	fprintf(out, "INSN time %u %.3f\n", id, t1 - t0);
	for (k = 0; k < nr_progs; k++) {
		if (progs[k].fd < 0 || info(&progs[k], &i) || i.run_cnt <= progs[k].cnt0)
			continue;
		fprintf(out, "INSN runcnt %u ", id);
		for (j = 0; j < BPF_TAG_SIZE; j++)
			fprintf(out, "%02x", progs[k].tag[j]);
		fprintf(out, " %s %llu\n", progs[k].name[0] ? progs[k].name : "-",
			(unsigned long long)(i.run_cnt - progs[k].cnt0));
	}
	fclose(out);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	unsigned long id;
	char *end;

	if (argc < 3 || (strcmp(argv[1], "start") && strcmp(argv[1], "stop") &&
			 strcmp(argv[1], "run")) ||
	    (!strcmp(argv[1], "run") ? argc < 5 : argc != 3)) {
		fprintf(stderr, "usage: insn_mark start|stop ID | insn_mark run ID REPORT CMD [ARGS...]\n");
		return 2;
	}
	id = strtoul(argv[2], &end, 10);
	if (*end || id < 1 || id > 63) {
		fprintf(stderr, "insn_mark: ID must be 1..63, got '%s'\n", argv[2]);
		return 2;
	}
	if (!strcmp(argv[1], "run"))
		return run(id, argv[3], &argv[4]);
	mark(strcmp(argv[1], "start") ? INSN_COST_STOP : INSN_COST_START, id);
	return 0;
}
