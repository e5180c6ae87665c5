// SPDX-License-Identifier: GPL-2.0
/*
 * ctl_send: one request sent raw to the agent's control socket, as a
 * client other than the CLI may send it (the CLI checks its arguments
 * before sending; the agent must not rely on that).
 *   ctl_send SOCKET LINE
 * Sends LINE and a newline, prints the answer line. Exits 0 once an
 * answer came, 1 if none did within 10 s (no agent, or it did not answer).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval limit = { .tv_sec = 10 };
	char buf[65536];
	size_t len = 0;
	ssize_t n;
	int fd;

	if (argc != 3 || strlen(argv[1]) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "usage: ctl_send SOCKET LINE\n");
		return 2;
	}
	strcpy(addr.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		perror("ctl_send: connect");
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof(limit));
	if (write(fd, argv[2], strlen(argv[2])) != (ssize_t)strlen(argv[2]) || write(fd, "\n", 1) != 1) {
		perror("ctl_send: write");
		return 1;
	}
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0) {
		len += n;
		if (memchr(buf, '\n', len))
			break;
	}
	close(fd);
	buf[len] = 0;
	if (!memchr(buf, '\n', len)) {
		fprintf(stderr, "ctl_send: no answer within 10 s (%zu bytes: %s)\n", len, buf);
		return 1;
	}
	fputs(buf, stdout);
	return 0;
}
