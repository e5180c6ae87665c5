// SPDX-License-Identifier: GPL-2.0
/*
 * proxy_ctl: exercise /dev/chameleon_proxy from the test VM.
 *   proxy_ctl info                    print the INFO ioctl's answer
 *   proxy_ctl bad-ioctl               an unknown ioctl fails with ENOTTY,
 *                                     a bad pointer with EFAULT
 *   proxy_ctl stats                   STATS as key=value lines, one per CPU
 *   proxy_ctl stats-time MS           STATS every millisecond for MS ms;
 *                                     prints calls= p50_ns= p99_ns= max_ns=
 *                                     of one call (a bench's probe of
 *                                     whether STATS waits on slow work)
 *   proxy_ctl park CPULIST HOLDOFF_MS PARK, prints critical_ns=
 *   proxy_ctl unpark CPULIST          UNPARK, prints ns= (synchronous part)
 *   proxy_ctl emulate on|off [low|med|high]
 *   proxy_ctl reset                   RESET
 *   proxy_ctl claim                   CLAIM, prints what it found and undid
 *   proxy_ctl pid                     this process's pid (useful in a session)
 *   proxy_ctl session                 the commands above (not fuzz), one a
 *                                     line from stdin, on one open file; one
 *                                     reply line each: "ok" and what the
 *                                     command alone prints, on one line, or
 *                                     "err ENAME" (the ioctl's errno; USAGE
 *                                     for a bad command, CHECK for a failed
 *                                     bad-ioctl check). Exits at EOF.
 *   proxy_ctl fuzz N SEED             N random ioctls, then RESET (unless
 *                                     another process owns the module); each
 *                                     call is judged against chameleon_proxy.h
 *                                     (see judge(), ownership included); exits
 *                                     1 if one a valid module must refuse
 *                                     succeeded, or any call ended with an
 *                                     errno the header does not give it
 *   proxy_ctl --uid UID CMD...        CMD with the device opened as root and
 *                                     the ioctls made as UID (root-only checks)
 * CPULIST is like "1,3-5", possibly empty; any id the mask words can hold
 * (below (nr_cpu_ids + 63) / 64 * 64) is sent as given, so that the module's own
 * checks, not ours, refuse one at or past nr_cpu_ids. A failed ioctl prints its
 * errno name on stderr and exits 1; bad usage exits 2.
 *
 * Why a session: since ABI 3 the module's state belongs to the open file that
 * made it, and is undone when that file is released. A one-shot park is
 * undone as the process exits; a park meant to last is sent from a session,
 * and closing its stdin (or killing it) is the owner going away.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "chameleon_proxy.h"

static int fd;
static unsigned int nr_cpu_ids;

/*
 * Where a command prints its answer: stdout, or in a session the buffer
 * that becomes its one-line reply.
 */
static FILE *out;

/*
 * What a command returns: 0, the errno of the ioctl that failed (the ioctl
 * named in failed_ioctl), or one of these, said on stderr first.
 */
#define CMD_USAGE	(-1)	/* a bad command or argument */
#define CMD_CHECK	(-2)	/* a check of bad-ioctl did not hold */
static const char *failed_ioctl;

static const char *errname(int e)
{
	const char *n = e ? strerrorname_np(e) : "ok";

	return n ? n : "E?";
}

static void die_ioctl(const char *what)
{
	int e = errno;

	fprintf(stderr, "%s: %s (%s)\n", what, errname(e), strerror(e));
	exit(1);
}

static int ioctl_failed(const char *what)
{
	failed_ioctl = what;
	return errno > 0 ? errno : EIO;
}

static void usage(void)
{
	fprintf(stderr, "usage: proxy_ctl info|bad-ioctl|stats|stats-time MS|reset|claim|pid|session\n"
		"       proxy_ctl park CPULIST HOLDOFF_MS | unpark CPULIST\n"
		"       proxy_ctl emulate on|off [low|med|high]\n"
		"       proxy_ctl fuzz N SEED\n");
	exit(2);
}

/* Said on stderr; a one-shot run then exits 2, a session answers "err USAGE". */
static int bad_arg(const char *what, const char *arg)
{
	fprintf(stderr, "proxy_ctl: %s '%s'\n", what, arg);
	return CMD_USAGE;
}

static int parse_ul(const char *s, unsigned long max, unsigned long *v)
{
	char *end;

	errno = 0;
	*v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *v > max || *s == '-')
		return bad_arg("bad number", s);
	return 0;
}

static unsigned int mask_words(void)
{
	return (nr_cpu_ids + 63) / 64;
}

/* "1,3-5" into mask words: any id the words hold, even past nr_cpu_ids. */
static int parse_cpulist(const char *list, uint64_t **maskp)
{
	uint64_t *mask = calloc(mask_words(), sizeof(*mask));
	char *copy = strdup(list), *save = NULL, *tok;
	int rc = 0;

	if (!mask || !copy) {
		perror("calloc");
		exit(1);
	}
	for (tok = strtok_r(copy, ",", &save); tok && !rc; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		unsigned long lo, hi, c;

		if (dash)
			*dash = 0;
		rc = parse_ul(tok, mask_words() * 64 - 1, &lo);
		hi = lo;
		if (!rc && dash)
			rc = parse_ul(dash + 1, mask_words() * 64 - 1, &hi);
		if (!rc && hi < lo)
			rc = bad_arg("bad range in", list);
		for (c = lo; !rc && c <= hi; c++)
			mask[c / 64] |= 1ULL << (c % 64);
	}
	free(copy);
	if (rc)
		free(mask);
	else
		*maskp = mask;
	return rc;
}

static void get_info(struct chameleon_proxy_info *info)
{
	memset(info, 0xff, sizeof(*info));
	if (ioctl(fd, CHAMELEON_PROXY_IOC_INFO, info))
		die_ioctl("INFO");
}

static int cmd_info(void)
{
	struct chameleon_proxy_info info;

	memset(&info, 0xff, sizeof(info));
	if (ioctl(fd, CHAMELEON_PROXY_IOC_INFO, &info))
		return ioctl_failed("INFO");
	fprintf(out, "abi_version=%u nr_cpu_ids=%u features=%#llx\n", info.abi_version,
		info.nr_cpu_ids, (unsigned long long)info.features);
	return 0;
}

static int cmd_bad_ioctl(void)
{
	if (ioctl(fd, _IO(CHAMELEON_PROXY_IOC_MAGIC, 0x7f), 0) == 0) {
		fprintf(stderr, "unknown ioctl succeeded\n");
		return CMD_CHECK;
	}
	if (errno != ENOTTY) {
		fprintf(stderr, "unknown ioctl: %s, expected ENOTTY\n", strerror(errno));
		return CMD_CHECK;
	}
	/* A bad user pointer must be refused with EFAULT, not crash. */
	if (ioctl(fd, CHAMELEON_PROXY_IOC_INFO, (void *)16) == 0 || errno != EFAULT) {
		fprintf(stderr, "INFO to a bad pointer: %s, expected EFAULT\n", strerror(errno));
		return CMD_CHECK;
	}
	fprintf(out, "unknown ioctl -> ENOTTY, bad pointer -> EFAULT\n");
	return 0;
}

#define P(field) fprintf(out, #field "=%lld\n", (long long)st.field)

static int cmd_stats(void)
{
	struct chameleon_proxy_cpu_stats *cs = calloc(nr_cpu_ids, sizeof(*cs));
	struct chameleon_proxy_stats st;
	unsigned int i;

	if (!cs) {
		perror("calloc");
		exit(1);
	}
	memset(&st, 0, sizeof(st));
	st.cpus = (uintptr_t)cs;
	st.nr_cpus = nr_cpu_ids;
	st.cpu_size = sizeof(*cs);
	if (ioctl(fd, CHAMELEON_PROXY_IOC_STATS, &st)) {
		free(cs);
		return ioctl_failed("STATS");
	}
	P(lends); P(lends_refused); P(reclaims); P(reclaims_refused);
	P(redirects_applied); P(redirects_skipped); P(restores);
	P(irq_failures); P(irq_last_error); P(managed_skipped); P(irqs_moved);
	P(parks); P(unparks); P(remove_cpu_calls); P(remove_cpu_failures);
	P(remove_cpu_last_error); P(add_cpu_calls); P(add_cpu_failures);
	P(add_cpu_last_error); P(park_critical_ns); P(park_physical_ns);
	P(unpark_critical_ns); P(unpark_physical_ns);
	P(emulate_on); P(emulate_category); P(emulate_failures); P(emulate_devices);
	P(owner_pid); P(releases); P(cleanup_ns);
	for (i = 0; i < nr_cpu_ids; i++) {
		const struct chameleon_proxy_cpu_stats *c = &cs[i];

		fprintf(out, "cpu=%u proxied_by=%d parked=%d offlined=%d duty_pm=%u idle_adjust_us=%d irqs=%llu softirqs=%llu ipis=%llu timers=%llu online=%d pending=%d proxying=%u level=%u live_irqs=%llu live_softirqs=%llu live_ipis=%llu live_timers=%llu\n",
			i, c->proxied_by, !!(c->flags & CHAMELEON_PROXY_CPU_PARKED),
			!!(c->flags & CHAMELEON_PROXY_CPU_OFFLINED), c->duty_pm, c->idle_adjust_us,
			(unsigned long long)c->irqs, (unsigned long long)c->softirqs,
			(unsigned long long)c->ipis, (unsigned long long)c->timers,
			!!(c->flags & CHAMELEON_PROXY_CPU_ONLINE),
			!!(c->flags & CHAMELEON_PROXY_CPU_PENDING), c->nr_proxying, c->level,
			(unsigned long long)c->live_irqs, (unsigned long long)c->live_softirqs,
			(unsigned long long)c->live_ipis, (unsigned long long)c->live_timers);
	}
	free(cs);
	return 0;
}

static int cmd_park(const char *list, const char *holdoff)
{
	struct chameleon_proxy_park p;
	unsigned long ms;
	uint64_t *mask;
	int rc;

	rc = parse_ul(holdoff, UINT32_MAX, &ms);
	if (rc || (rc = parse_cpulist(list, &mask)))
		return rc;
	memset(&p, 0, sizeof(p));
	p.mask = (uintptr_t)mask;
	p.mask_words = mask_words();
	p.holdoff_ms = ms;
	rc = ioctl(fd, CHAMELEON_PROXY_IOC_PARK, &p) ? ioctl_failed("PARK") : 0;
	free(mask);
	if (!rc)
		fprintf(out, "critical_ns=%llu\n", (unsigned long long)p.critical_ns);
	return rc;
}

static int cmd_unpark(const char *list)
{
	struct chameleon_proxy_unpark u;
	uint64_t *mask;
	int rc;

	rc = parse_cpulist(list, &mask);
	if (rc)
		return rc;
	memset(&u, 0, sizeof(u));
	u.mask = (uintptr_t)mask;
	u.mask_words = mask_words();
	rc = ioctl(fd, CHAMELEON_PROXY_IOC_UNPARK, &u) ? ioctl_failed("UNPARK") : 0;
	free(mask);
	if (!rc)
		fprintf(out, "ns=%llu\n", (unsigned long long)u.critical_ns);
	return rc;
}

/* emulate on [low|med|high] (high if none) | emulate off */
static int cmd_emulate(int argc, char **argv)
{
	static const char *const cats[] = { "low", "med", "high" };
	struct chameleon_proxy_emulate e;
	unsigned int i;

	memset(&e, 0, sizeof(e));
	if (argc < 2)
		return bad_arg("emulate needs on [CATEGORY] or off", "");
	if (argc > 3)
		return bad_arg("too many arguments to emulate:", argv[3]);
	if (!strcmp(argv[1], "on")) {
		e.on = 1;
		e.category = CHAMELEON_PROXY_CAT_HIGH;
		if (argc == 3) {
			for (i = 0; i < 3 && strcmp(argv[2], cats[i]); i++)
				;
			if (i == 3)
				return bad_arg("no such category", argv[2]);
			e.category = i;
		}
	} else if (strcmp(argv[1], "off") || argc != 2) {
		return bad_arg("emulate needs on [CATEGORY] or off, got", argv[1]);
	}
	if (ioctl(fd, CHAMELEON_PROXY_IOC_EMULATE, &e))
		return ioctl_failed("EMULATE");
	fprintf(out, "emulate=%s\n", e.on ? cats[e.category] : "off");
	return 0;
}

static int cmd_reset(void)
{
	if (ioctl(fd, CHAMELEON_PROXY_IOC_RESET, 0))
		return ioctl_failed("RESET");
	fprintf(out, "reset=ok\n");
	return 0;
}

/* CLAIM: "found=none" or the names of what it undid, and how many. */
static int cmd_claim(void)
{
	static const struct { __u64 bit; const char *name; } found[] = {
		{ CHAMELEON_PROXY_FOUND_PARKED, "parked" },
		{ CHAMELEON_PROXY_FOUND_OFFLINED, "offlined" },
		{ CHAMELEON_PROXY_FOUND_LENT, "lent" },
		{ CHAMELEON_PROXY_FOUND_IRQS, "irqs" },
		{ CHAMELEON_PROXY_FOUND_EMULATING, "emulating" },
	};
	struct chameleon_proxy_claim c;
	const char *sep = "";
	__u64 rest;
	unsigned int i;

	memset(&c, 0, sizeof(c));
	if (ioctl(fd, CHAMELEON_PROXY_IOC_CLAIM, &c))
		return ioctl_failed("CLAIM");
	fprintf(out, "found=%s", c.found ? "" : "none");
	rest = c.found;
	for (i = 0; i < sizeof(found) / sizeof(found[0]); i++) {
		if (!(c.found & found[i].bit))
			continue;
		fprintf(out, "%s%s", sep, found[i].name);
		sep = ",";
		rest &= ~found[i].bit;
	}
	if (rest)	/* bits this tool does not know: shown, not dropped */
		fprintf(out, "%s%#llx", sep, (unsigned long long)rest);
	fprintf(out, " nr_offlined=%u nr_irqs=%u\n", c.nr_offlined, c.nr_irqs);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int cmd_stats_time(const char *ms_arg)
{
	struct chameleon_proxy_cpu_stats *cs = calloc(nr_cpu_ids, sizeof(*cs));
	uint64_t end, *lat = NULL;
	size_t n = 0, cap = 0;
	char *e;
	long ms = strtol(ms_arg, &e, 10);

	if (*e || ms <= 0 || !cs) {
		free(cs);
		return CMD_USAGE;
	}
	end = now_ns() + (uint64_t)ms * 1000000ull;
	while (now_ns() < end) {
		struct chameleon_proxy_stats st;
		uint64_t t0;

		memset(&st, 0, sizeof(st));
		st.cpus = (uintptr_t)cs;
		st.nr_cpus = nr_cpu_ids;
		st.cpu_size = sizeof(*cs);
		t0 = now_ns();
		if (ioctl(fd, CHAMELEON_PROXY_IOC_STATS, &st)) {
			free(cs);
			free(lat);
			return ioctl_failed("STATS");
		}
		if (n == cap) {
			cap = cap ? 2 * cap : 1024;
			lat = realloc(lat, cap * sizeof(*lat));
			if (!lat) {
				perror("realloc");
				exit(1);
			}
		}
		lat[n++] = now_ns() - t0;
		usleep(1000);
	}
	free(cs);
	if (!n) {
		free(lat);
		return CMD_USAGE;
	}
	qsort(lat, n, sizeof(*lat), cmp_u64);
	fprintf(out, "calls=%zu p50_ns=%llu p99_ns=%llu max_ns=%llu\n", n,
		(unsigned long long)lat[(n - 1) / 2],
		(unsigned long long)lat[(n * 99 + 99) / 100 - 1],
		(unsigned long long)lat[n - 1]);
	free(lat);
	return 0;
}

/* One command, argv[0] its name; fuzz and session are not commands here. */
static int run_cmd(int argc, char **argv)
{
	const char *c = argv[0];

	if (!strcmp(c, "info") && argc == 1)
		return cmd_info();
	if (!strcmp(c, "bad-ioctl") && argc == 1)
		return cmd_bad_ioctl();
	if (!strcmp(c, "stats") && argc == 1)
		return cmd_stats();
	if (!strcmp(c, "stats-time") && argc == 2)
		return cmd_stats_time(argv[1]);
	if (!strcmp(c, "park") && argc == 3)
		return cmd_park(argv[1], argv[2]);
	if (!strcmp(c, "unpark") && argc == 2)
		return cmd_unpark(argv[1]);
	if (!strcmp(c, "emulate"))
		return cmd_emulate(argc, argv);
	if (!strcmp(c, "reset") && argc == 1)
		return cmd_reset();
	if (!strcmp(c, "claim") && argc == 1)
		return cmd_claim();
	if (!strcmp(c, "pid") && argc == 1) {
		fprintf(out, "pid=%d\n", (int)getpid());
		return 0;
	}
	return bad_arg("unknown command or wrong number of arguments:", c);
}

/*
 * session: one open file for every command read from stdin, so that what a
 * command makes (a park, the emulation) lasts until the next one undoes it
 * or the file goes (EOF, or this process killed). One reply line each,
 * flushed at once: the other end reads it from a FIFO.
 */
#define SESSION_MAX_WORDS	8

static int cmd_session(void)
{
	char *line = NULL, *save, *w, *words[SESSION_MAX_WORDS], *buf, *p;
	size_t cap = 0, len;
	int n, rc;

	while (getline(&line, &cap, stdin) >= 0) {
		n = 0;
		for (w = strtok_r(line, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
			if (n < SESSION_MAX_WORDS)
				words[n] = w;
			n++;
		}
		buf = NULL;
		len = 0;
		out = open_memstream(&buf, &len);
		if (!out) {
			perror("open_memstream");
			return 1;
		}
		if (!n)
			rc = bad_arg("empty command", "");
		else if (n > SESSION_MAX_WORDS)
			rc = bad_arg("too many words in command", words[0]);
		else
			rc = run_cmd(n, words);
		fclose(out);
		if (rc == 0) {
			/* What the command alone prints, its lines joined. */
			for (p = buf; *p; p++)
				if (*p == '\n')
					*p = ' ';
			while (len && buf[len - 1] == ' ')
				buf[--len] = 0;
			printf("ok%s%s\n", len ? " " : "", buf);
		} else {
			printf("err %s\n", rc > 0 ? errname(rc) : rc == CMD_USAGE ? "USAGE" : "CHECK");
		}
		free(buf);
		fflush(stdout);
	}
	free(line);
	return 0;
}

/* --- fuzz ------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

static uint64_t rnd_below(uint64_t n)
{
	return n ? rnd() % n : 0;
}

#define FUZZ_BUF	8192
#define FUZZ_MAXSIZE	1024	/* below FUZZ_BUF: the kernel writes at most the size */

static unsigned char *fuzz_buf;		/* argument structs */
static uint64_t *fuzz_mask;		/* cpumask words */
static unsigned char *fuzz_cpus;	/* STATS per-CPU buffer */
static size_t fuzz_cpus_len;
static unsigned char *fuzz_edge;	/* last bytes before a PROT_NONE page */
static void *fuzz_hole;			/* unmapped */

/* Pointers the kernel must refuse without touching our memory. */
static uint64_t bad_ptr(void)
{
	switch (rnd_below(4)) {
	case 0: return 0;
	case 1: return 16;
	case 2: return (uintptr_t)fuzz_hole;
	default: return 0xffff888000000000ULL;	/* kernel address */
	}
}

static void fill_mask(void)
{
	unsigned int i, words = mask_words();

	memset(fuzz_mask, 0, words * sizeof(*fuzz_mask));
	for (i = 0; i < nr_cpu_ids; i++)
		if (rnd_below(3) == 0)
			fuzz_mask[i / 64] |= 1ULL << (i % 64);
	if (rnd_below(8) == 0)		/* bits past nr_cpu_ids, or CPU 0 */
		fuzz_mask[rnd_below(words)] |= 1ULL << rnd_below(64);
}

static uint64_t mask_ptr(uint32_t *words)
{
	fill_mask();
	*words = rnd_below(8) ? mask_words() : (uint32_t)rnd_below(300);
	return rnd_below(8) ? (uintptr_t)fuzz_mask : bad_ptr();
}

/* A mostly valid argument for command @nr, with one thing off now and then. */
static void plausible_arg(unsigned int nr, void *buf)
{
	switch (nr) {
	case _IOC_NR(CHAMELEON_PROXY_IOC_PARK): {
		struct chameleon_proxy_park *p = buf;

		p->mask = mask_ptr(&p->mask_words);
		p->holdoff_ms = rnd_below(8) ? rnd_below(50) : (uint32_t)rnd();
		break;
	}
	case _IOC_NR(CHAMELEON_PROXY_IOC_UNPARK): {
		struct chameleon_proxy_unpark *u = buf;

		u->mask = mask_ptr(&u->mask_words);
		break;
	}
	case _IOC_NR(CHAMELEON_PROXY_IOC_EMULATE): {
		struct chameleon_proxy_emulate *e = buf;

		e->on = rnd_below(3);
		e->category = rnd_below(4);
		break;
	}
	case _IOC_NR(CHAMELEON_PROXY_IOC_CLAIM): {
		struct chameleon_proxy_claim *c = buf;

		/* Its first word is flags, not an address: set one now and then. */
		if (rnd_below(8) == 0)
			c->flags = 1ULL << rnd_below(64);
		break;
	}
	case _IOC_NR(CHAMELEON_PROXY_IOC_STATS): {
		struct chameleon_proxy_stats *s = buf;

		s->nr_cpus = rnd_below(4) ? nr_cpu_ids : (uint32_t)rnd_below(nr_cpu_ids + 2);
		s->cpu_size = rnd_below(4) ? sizeof(struct chameleon_proxy_cpu_stats)
					   : (uint32_t)rnd_below(4200);
		/* Only point at our buffer when it is big enough for the claim. */
		if ((uint64_t)s->nr_cpus * s->cpu_size <= fuzz_cpus_len && rnd_below(8))
			s->cpus = (uintptr_t)fuzz_cpus;
		else
			s->cpus = bad_ptr();
		break;
	}
	}
	/*
	 * Now and then a flag, a reserved word or a trailing byte set; never
	 * in the first 8 bytes, the address the kernel may write through.
	 */
	if (rnd_below(10) == 0)
		((unsigned char *)buf)[8 + rnd_below(88)] = rnd();
}

/*
 * The errnos chameleon_proxy.h gives, as bits: what a call may end with.
 * ENOTTY: unknown command or direction; EINVAL: a size below the first
 * version, a bad field, flag or mask; EFAULT: memory the module cannot read or
 * write; E2BIG: nonzero bytes past the struct it knows; EBUSY, EOPNOTSUPP:
 * refusals that depend on the module's state (a CPU parked or offline, one
 * the platform cannot unplug, another idle-injection user, another file
 * owning the module for CLAIM); EPERM: not root; EACCES: a valid PARK,
 * UNPARK, EMULATE or RESET from a file that is not the module's owner.
 */
enum { X_NOTTY = 1, X_INVAL = 2, X_FAULT = 4, X_2BIG = 8, X_BUSY = 16,
       X_NOTSUPP = 32, X_PERM = 64, X_ACCES = 128 };
static const int x_errno[] = { ENOTTY, EINVAL, EFAULT, E2BIG, EBUSY, EOPNOTSUPP, EPERM,
			       EACCES };
#define X_N	(sizeof(x_errno) / sizeof(x_errno[0]))

static unsigned int x_bit(int e)
{
	unsigned int i;

	for (i = 0; i < X_N; i++)
		if (x_errno[i] == e)
			return 1U << i;
	return 0;
}

/*
 * What the header says of one call. A call with a fault (faults != 0) must
 * fail, with the errno of one of its faults: which one the module meets
 * first is its business. A call without one is valid: it may succeed, or be
 * refused for the module's state, with one of the errnos in @state only;
 * unless @refused says why it cannot succeed (another file owns the module).
 */
struct verdict {
	unsigned int faults;
	unsigned int state;
	const char *why;	/* the first fault, for the report */
	const char *refused;	/* valid, but must fail all the same */
};

static void fault(struct verdict *v, unsigned int x, const char *why)
{
	if (!v->faults)
		v->why = why;
	v->faults |= x;
}

static unsigned char *present;		/* present[cpu]: /sys/.../cpu/present */
static size_t arg_avail;		/* bytes of the call's struct that are ours */

/* Bytes of our memory at @p, readable and writable: 0 for the bad pointers. */
static size_t avail_at(uint64_t p)
{
	uint64_t edge = (uintptr_t)fuzz_edge, page = sysconf(_SC_PAGESIZE);

	if (p == (uintptr_t)fuzz_buf)
		return FUZZ_BUF;
	if (p >= edge - page && p <= edge)
		return edge - p;
	return 0;
}

/* A cpumask argument: @words words at @uaddr. PARK refuses CPU 0 too. */
static void judge_mask(struct verdict *v, uint64_t uaddr, uint32_t words, int park)
{
	unsigned int c, any = 0;

	if (words != mask_words()) {
		fault(v, X_INVAL, "mask_words is not (nr_cpu_ids + 63) / 64");
		return;
	}
	if (uaddr != (uintptr_t)fuzz_mask) {
		fault(v, X_FAULT, "the mask's address is not readable");
		return;
	}
	for (c = 0; c < words * 64; c++) {
		if (!(fuzz_mask[c / 64] & (1ULL << (c % 64))))
			continue;
		any = 1;
		if (c >= nr_cpu_ids)
			fault(v, X_INVAL, "a mask bit at or past nr_cpu_ids");
		else if (!present[c])
			fault(v, X_INVAL, "a CPU that is not present");
	}
	if (!any)
		fault(v, X_INVAL, "an empty mask");
	/* CPU 0 is never parked, so it cannot be unparked either. */
	if (fuzz_mask[0] & 1)
		fault(v, X_INVAL, park ? "PARK of CPU 0" : "UNPARK of CPU 0, never parked");
}

static int nonzero(const unsigned char *p, size_t n)
{
	while (n--)
		if (*p++)
			return 1;
	return 0;
}

#define NR_CLAIM	_IOC_NR(CHAMELEON_PROXY_IOC_CLAIM)
#define NR_LAST		NR_CLAIM

/*
 * The verdict on the arguments of ioctl(fd, @cmd, @arg), from
 * chameleon_proxy.h alone; the struct the module reads is fuzz_buf's first
 * bytes, arg_avail of them ours.
 */
static struct verdict judge_args(unsigned long cmd, unsigned long arg)
{
	static const unsigned int dir[] = { _IOC_READ, _IOC_READ | _IOC_WRITE,
		_IOC_READ | _IOC_WRITE, _IOC_WRITE, _IOC_READ | _IOC_WRITE, _IOC_NONE,
		_IOC_READ | _IOC_WRITE };
	static const size_t ksize[] = {
		sizeof(struct chameleon_proxy_info), sizeof(struct chameleon_proxy_park),
		sizeof(struct chameleon_proxy_unpark), sizeof(struct chameleon_proxy_emulate),
		sizeof(struct chameleon_proxy_stats), 0, sizeof(struct chameleon_proxy_claim) };
	unsigned int nr = _IOC_NR(cmd), size = _IOC_SIZE(cmd);
	struct verdict v = { 0, 0, NULL, NULL };
	const unsigned char *b = fuzz_buf;

	if (_IOC_TYPE(cmd) != CHAMELEON_PROXY_IOC_MAGIC || nr > NR_LAST ||
	    _IOC_DIR(cmd) != dir[nr]) {
		fault(&v, X_NOTTY, "an unknown command or direction");
		return v;
	}
	if (nr >= 1 && nr != 4 && geteuid()) {
		fault(&v, X_PERM, "an admin command as a user");
		return v;
	}
	if (nr == 5) {
		if (size || arg)
			fault(&v, X_INVAL, "RESET with a size or an argument");
		return v;
	}
	if (size < ksize[nr]) {
		fault(&v, X_INVAL, "a size below the first version");
		return v;
	}
	if (arg_avail < size) {
		/* Trailing bytes are checked before the struct is copied. */
		if ((_IOC_DIR(cmd) & _IOC_WRITE) && arg_avail > ksize[nr] &&
		    nonzero(b + ksize[nr], arg_avail - ksize[nr]))
			fault(&v, X_2BIG, "nonzero bytes past the struct");
		fault(&v, X_FAULT, "an argument not all readable and writable");
		return v;
	}
	if ((_IOC_DIR(cmd) & _IOC_WRITE) && nonzero(b + ksize[nr], size - ksize[nr])) {
		fault(&v, X_2BIG, "nonzero bytes past the struct");
		return v;
	}
	switch (nr) {
	case 1: {
		const struct chameleon_proxy_park *p = (const void *)b;

		judge_mask(&v, p->mask, p->mask_words, 1);
		if (p->flags || nonzero((const void *)p->reserved, sizeof(p->reserved)))
			fault(&v, X_INVAL, "PARK flags or reserved words set");
		if (p->holdoff_ms > CHAMELEON_PROXY_MAX_HOLDOFF_MS)
			fault(&v, X_INVAL, "a hold-off over CHAMELEON_PROXY_MAX_HOLDOFF_MS");
		/* parked or offline; not hotpluggable; no CPU left */
		v.state = X_BUSY | X_NOTSUPP | X_INVAL;
		break;
	}
	case 2: {
		const struct chameleon_proxy_unpark *u = (const void *)b;

		judge_mask(&v, u->mask, u->mask_words, 0);
		if (u->flags || nonzero((const void *)u->reserved, sizeof(u->reserved)))
			fault(&v, X_INVAL, "UNPARK flags or reserved words set");
		v.state = X_INVAL;	/* a CPU not parked */
		break;
	}
	case 3: {
		const struct chameleon_proxy_emulate *e = (const void *)b;

		if (e->flags || nonzero((const void *)e->reserved, sizeof(e->reserved)))
			fault(&v, X_INVAL, "EMULATE flags or reserved words set");
		if (e->on > 1 || e->category > CHAMELEON_PROXY_CAT_HIGH)
			fault(&v, X_INVAL, "EMULATE on or category out of range");
		if (!e->on && e->category)
			fault(&v, X_INVAL, "EMULATE off with a category");
		v.state = X_BUSY;	/* another idle-injection user */
		break;
	}
	case 4: {
		const struct chameleon_proxy_stats *st = (const void *)b;

		if (st->flags)
			fault(&v, X_INVAL, "STATS flags set");
		if (!st->nr_cpus && st->cpus)
			fault(&v, X_INVAL, "STATS with cpus but nr_cpus 0");
		if (st->nr_cpus && (st->nr_cpus != nr_cpu_ids ||
				    st->cpu_size < sizeof(struct chameleon_proxy_cpu_stats) ||
				    st->cpu_size > sysconf(_SC_PAGESIZE) || st->cpu_size % 8))
			fault(&v, X_INVAL, "STATS nr_cpus or cpu_size wrong");
		else if (st->nr_cpus && st->cpus != (uintptr_t)fuzz_cpus)
			fault(&v, X_FAULT, "STATS cpus not writable");
		break;
	}
	case NR_CLAIM: {
		const struct chameleon_proxy_claim *c = (const void *)b;

		/* found, nr_offlined, nr_irqs, generation: outputs, anything goes in. */
		if (c->flags || nonzero((const void *)c->reserved, sizeof(c->reserved)))
			fault(&v, X_INVAL, "CLAIM flags or reserved words set");
		break;
	}
	}
	return v;
}

/* The module's owner now (STATS.owner_pid, the opener's tgid), 0 if none. */
static pid_t owner_now(void)
{
	struct chameleon_proxy_stats st;

	memset(&st, 0, sizeof(st));
	if (ioctl(fd, CHAMELEON_PROXY_IOC_STATS, &st))
		die_ioctl("STATS (owner)");
	return st.owner_pid;
}

/*
 * The verdict on ioctl(fd, @cmd, @arg): its arguments', then ownership's
 * (ABI 3). A valid PARK, UNPARK, EMULATE or RESET from a file that is not
 * the owner fails with EACCES, after its argument and maybe its state were
 * checked (so its state errnos stay possible), and CLAIM fails with EBUSY.
 * While no file owns the module, the first of these makes ours the owner:
 * EACCES is wrong then, as it is for the owner. Asked of the module before
 * each such call (the agent may own it; the fuzz may have become the owner
 * by an earlier call, or not if that call was refused for the state first).
 */
static struct verdict judge(unsigned long cmd, unsigned long arg)
{
	struct verdict v = judge_args(cmd, arg);
	unsigned int nr = _IOC_NR(cmd);
	pid_t owner;

	if (v.faults || nr == _IOC_NR(CHAMELEON_PROXY_IOC_INFO) ||
	    nr == _IOC_NR(CHAMELEON_PROXY_IOC_STATS))
		return v;
	owner = owner_now();
	if (!owner || owner == getpid())
		return v;
	if (nr == NR_CLAIM) {
		v.state |= X_BUSY;
		v.refused = "CLAIM while another file owns the module succeeded";
	} else {
		v.state |= X_ACCES;
		v.refused = "a change from a file that is not the owner succeeded";
	}
	return v;
}

/* One random call, its verdict in @v; returns its errno, 0 on success. */
static int fuzz_one(struct verdict *v, unsigned long *cmdp)
{
	static const unsigned int dirs[] = { _IOC_NONE, _IOC_READ, _IOC_WRITE,
					     _IOC_READ | _IOC_WRITE };
	unsigned int nr, size, dir, type = CHAMELEON_PROXY_IOC_MAGIC;
	unsigned long cmd, arg;
	void *buf = fuzz_buf;

	memset(fuzz_buf, 0, FUZZ_BUF);
	nr = rnd_below(8);
	switch (rnd_below(4)) {
	case 0:		/* anything near our magic */
		type += (int)rnd_below(3) - 1;
		dir = dirs[rnd_below(4)];
		size = rnd_below(FUZZ_MAXSIZE);
		for (size_t i = 0; i < 128; i++)
			fuzz_buf[i] = rnd_below(4) ? 0 : rnd();
		/* The first word may be read as an address to write to. */
		*(uint64_t *)fuzz_buf = bad_ptr();
		cmd = _IOC(dir, type, nr, size);
		break;
	default: {	/* a real command, maybe with another size */
		static const unsigned long cmds[] = {
			CHAMELEON_PROXY_IOC_INFO, CHAMELEON_PROXY_IOC_PARK,
			CHAMELEON_PROXY_IOC_UNPARK, CHAMELEON_PROXY_IOC_EMULATE,
			CHAMELEON_PROXY_IOC_STATS, CHAMELEON_PROXY_IOC_RESET,
			CHAMELEON_PROXY_IOC_CLAIM,
		};

		cmd = cmds[rnd_below(sizeof(cmds) / sizeof(cmds[0]))];
		nr = _IOC_NR(cmd);
		size = _IOC_SIZE(cmd);
		if (rnd_below(6) == 0)
			size = rnd_below(FUZZ_MAXSIZE);
		cmd = _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), nr, size);
		plausible_arg(nr, fuzz_buf);
		break;
	}
	}
	switch (rnd_below(10)) {
	case 0:
		arg = bad_ptr();
		break;
	case 1:		/* straddles a PROT_NONE page: partial copies fault */
		buf = fuzz_edge - rnd_below(size + 1);
		memcpy(buf, fuzz_buf, fuzz_edge - (unsigned char *)buf);
		arg = (uintptr_t)buf;
		break;
	case 2:
		arg = _IOC_DIR(cmd) == _IOC_NONE ? rnd() : 0;
		break;
	default:
		arg = _IOC_DIR(cmd) == _IOC_NONE ? 0 : (uintptr_t)fuzz_buf;
		break;
	}
	arg_avail = avail_at(arg);
	*v = judge(cmd, arg);
	*cmdp = cmd;
	return ioctl(fd, cmd, arg) ? errno : 0;
}

static void read_present(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/present", "r");
	unsigned long lo, hi, c;
	char sep = ',';

	present = calloc(nr_cpu_ids, 1);
	if (!f || !present) {
		perror("/sys/devices/system/cpu/present");
		exit(1);
	}
	while (sep == ',' && fscanf(f, "%lu", &lo) == 1) {
		hi = lo;
		if (fscanf(f, "%c", &sep) == 1 && sep == '-' &&
		    (fscanf(f, "%lu", &hi) != 1 || fscanf(f, "%c", &sep) != 1))
			sep = 0;
		for (c = lo; c <= hi && c < nr_cpu_ids; c++)
			present[c] = 1;
	}
	fclose(f);
}

static void print_tally(const char *what, const unsigned long *by_errno)
{
	int e;

	printf("%s", what);
	for (e = 0; e < 4096; e++)
		if (by_errno[e])
			printf(" %s=%lu", errname(e), by_errno[e]);
	printf("\n");
}

static int cmd_fuzz(const char *n_arg, const char *seed_arg)
{
	static const char *const names[] = { "info", "park", "unpark", "emulate", "stats",
					     "reset", "claim" };
	static unsigned long must[4096], valid[4096], ok_by[NR_LAST + 1];
	unsigned long i, n, seed, nmust = 0, nvalid = 0, bad = 0, cmd;
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *pages;
	struct verdict v;
	pid_t owner;
	int e, wrong;

	if (parse_ul(n_arg, 100000000, &n) || parse_ul(seed_arg, ULONG_MAX, &seed))
		usage();
	/* First, so that a crash or a hang can be replayed. */
	printf("seed=%lu\n", seed);
	/* Who owns the module decides what a change may get (see judge()). */
	printf("pid=%d owner_pid=%d\n", (int)getpid(), (int)owner_now());
	fflush(stdout);
	rng_state = seed * 2654435761ULL + 1;
	fuzz_buf = calloc(1, FUZZ_BUF);
	fuzz_mask = calloc(mask_words() + 8, sizeof(*fuzz_mask));
	fuzz_cpus_len = (size_t)(nr_cpu_ids + 2) * 4200;
	fuzz_cpus = calloc(1, fuzz_cpus_len);
	pages = mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!fuzz_buf || !fuzz_mask || !fuzz_cpus || pages == MAP_FAILED) {
		perror("alloc");
		return 1;
	}
	/* page 0: writable, page 1: PROT_NONE, page 2: unmapped */
	if (mprotect(pages + page, page, PROT_NONE) || munmap(pages + 2 * page, page)) {
		perror("mprotect");
		return 1;
	}
	fuzz_edge = pages + page;
	fuzz_hole = pages + 2 * page;
	read_present();

	for (i = 0; i < n; i++) {
		e = fuzz_one(&v, &cmd);
		if (e < 0 || e >= 4096)
			e = 4095;
		if (v.faults) {
			nmust++;
			must[e]++;
		} else {
			nvalid++;
			valid[e]++;
			if (!e)		/* valid: a real command */
				ok_by[_IOC_NR(cmd)]++;
		}
		if (v.faults)
			wrong = e == 0 || !(x_bit(e) & v.faults);
		else
			wrong = e ? !(x_bit(e) & v.state) : v.refused != NULL;
		if (wrong && bad++ < 20)
			printf("wrong: call %lu cmd=%#lx (%s): %s\n", i, cmd,
			       v.faults ? v.why : !e && v.refused ? v.refused : "valid",
			       errname(e));
	}
	printf("calls=%lu\n", n);
	printf("must_fail=%lu\n", nmust);
	print_tally("must_fail_by", must);
	printf("valid=%lu succeeded=%lu\n", nvalid, valid[0]);
	print_tally("valid_by", valid);
	printf("succeeded_by");
	for (i = 0; i <= NR_LAST; i++)
		printf(" %s=%lu", names[i], ok_by[i]);
	printf("\n");
	printf("wrong=%lu\n", bad);
	/*
	 * Leave the machine as we found it: ours to reset if we own the
	 * module; if another file does (the agent), what is there is its.
	 */
	if (ioctl(fd, CHAMELEON_PROXY_IOC_RESET, 0)) {
		e = errno;
		owner = owner_now();
		errno = e;
		if (e != EACCES || !owner || owner == getpid())
			die_ioctl("RESET");
		printf("reset=not ours: pid %d owns the module\n", (int)owner);
	} else {
		printf("reset=ok\n");
	}
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct chameleon_proxy_info info;
	unsigned long uid = ULONG_MAX;
	int rc;

	if (argc >= 3 && !strcmp(argv[1], "--uid")) {
		if (parse_ul(argv[2], UINT32_MAX - 1, &uid))
			usage();
		argc -= 2;
		argv += 2;
	}
	if (argc < 2)
		usage();
	fd = open("/dev/chameleon_proxy", O_RDWR);
	if (fd < 0) {
		fprintf(stderr, "open /dev/chameleon_proxy: %s\n", strerror(errno));
		return 1;
	}
	/* An open file kept across a drop of privileges: the ioctls check. */
	if (uid != ULONG_MAX && (setgid(uid) || setuid(uid))) {
		perror("setuid");
		return 1;
	}
	get_info(&info);
	nr_cpu_ids = info.nr_cpu_ids;
	if (!nr_cpu_ids || nr_cpu_ids > 65536) {
		fprintf(stderr, "implausible nr_cpu_ids %u\n", nr_cpu_ids);
		return 1;
	}
	out = stdout;
	if (!strcmp(argv[1], "fuzz") && argc == 4)
		return cmd_fuzz(argv[2], argv[3]);
	if (!strcmp(argv[1], "session") && argc == 2)
		return cmd_session();
	rc = run_cmd(argc - 1, argv + 1);
	if (rc > 0) {
		fprintf(stderr, "%s: %s (%s)\n", failed_ioctl, errname(rc), strerror(rc));
		return 1;
	}
	if (rc == CMD_USAGE)
		usage();
	return rc ? 1 : 0;
}
