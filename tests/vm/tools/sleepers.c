// SPDX-License-Identifier: GPL-2.0
/*
 * sleepers: many cgroups, many sleeping processes, for the agent's loop
 * bench (bench_lateness.sh): what a rules scan walks.
 *   sleepers -r ROOT_DIR -c NR_CGROUPS -p PER_CGROUP [-N NAME]
 * Makes ROOT_DIR/g0 .. g<NR_CGROUPS-1> (cgroup v2 directories) and forks
 * PER_CGROUP children into each; a child renames itself NAME (default
 * "sleeper"), joins its cgroup and sleeps in pause(). Prints "sleepers
 * ready processes=N" once all are in place; on SIGTERM or SIGINT it kills
 * them, waits for them and removes the cgroups.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static int join(const char *dir)
{
	char path[600], pid[32];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "w");
	if (!f)
		return -1;
	snprintf(pid, sizeof(pid), "%d\n", getpid());
	ok = fputs(pid, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *root = NULL, *name = "sleeper";
	long nr_cg = 0, per = 0, made = 0, i, j;
	char dir[512];
	int opt;

	while ((opt = getopt(argc, argv, "r:c:p:N:")) != -1) {
		switch (opt) {
		case 'r': root = optarg; break;
		case 'c': nr_cg = strtol(optarg, NULL, 10); break;
		case 'p': per = strtol(optarg, NULL, 10); break;
		case 'N': name = optarg; break;
		default: goto usage;
		}
	}
	if (!root || nr_cg <= 0 || per <= 0)
		goto usage;
	signal(SIGTERM, on_stop);
	signal(SIGINT, on_stop);
	if (mkdir(root, 0755) && errno != EEXIST) {
		perror(root);
		return 1;
	}
	/* Children in their own group: one kill reaches them all. */
	setpgid(0, 0);
	for (i = 0; i < nr_cg && !stop; i++) {
		snprintf(dir, sizeof(dir), "%s/g%ld", root, i);
		if (mkdir(dir, 0755) && errno != EEXIST) {
			perror(dir);
			stop = 1;
			break;
		}
		for (j = 0; j < per && !stop; j++) {
			pid_t pid = fork();

			if (pid < 0) {
				perror("fork");
				stop = 1;
				break;
			}
			if (pid == 0) {
				signal(SIGTERM, SIG_DFL);
				signal(SIGINT, SIG_DFL);
				prctl(PR_SET_NAME, name);
				if (join(dir))
					_exit(1);
				for (;;)
					pause();
			}
			made++;
		}
	}
	if (!stop) {
		printf("sleepers ready processes=%ld\n", made);
		fflush(stdout);
	}
	while (!stop)
		pause();
	signal(SIGTERM, SIG_IGN);
	kill(0, SIGTERM);
	while (wait(NULL) > 0 || errno == EINTR)
		;
	for (i = 0; i < nr_cg; i++) {
		snprintf(dir, sizeof(dir), "%s/g%ld", root, i);
		rmdir(dir);
	}
	rmdir(root);
	return 0;
usage:
	fprintf(stderr, "usage: sleepers -r ROOT_DIR -c NR_CGROUPS -p PER_CGROUP [-N NAME]\n");
	return 2;
}
