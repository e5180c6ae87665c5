// SPDX-License-Identifier: GPL-2.0
/*
 * trickle: a slow client of the agent's control socket, for the loop bench
 * (bench_lateness.sh).
 *   trickle SOCKET GAP_MS
 * Over and over: connect, send a status request one byte every GAP_MS ms,
 * read the answer to its end, close. Prints nothing; exits on SIGTERM.
 * An agent that serves clients on its loop is held for as long as the
 * request takes to arrive (up to its 500 ms deadline) each time.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	static const char req[] = "{\"v\":1,\"op\":\"status\"}\n";
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timespec gap;
	char buf[4096];
	long ms;

	if (argc != 3 || strlen(argv[1]) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "usage: trickle SOCKET GAP_MS\n");
		return 2;
	}
	ms = strtol(argv[2], NULL, 10);
	gap.tv_sec = ms / 1000;
	gap.tv_nsec = (ms % 1000) * 1000000L;
	strcpy(addr.sun_path, argv[1]);
	for (;;) {
		int fd = socket(AF_UNIX, SOCK_STREAM, 0);
		size_t i;

		if (fd < 0)
			return 1;
		if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
			close(fd);
			nanosleep(&gap, NULL);
			continue;
		}
		for (i = 0; i < sizeof(req) - 1; i++) {
			if (write(fd, &req[i], 1) != 1)
				break;
			nanosleep(&gap, NULL);
		}
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
}
