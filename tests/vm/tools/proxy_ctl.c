// SPDX-License-Identifier: GPL-2.0
/*
 * proxy_ctl: exercise /dev/chameleon_proxy from the test VM.
 *   proxy_ctl info                    print the INFO ioctl's answer
 *   proxy_ctl bad-ioctl               an unknown ioctl fails with ENOTTY,
 *                                     a bad pointer with EFAULT
 *   proxy_ctl stats                   STATS as key=value lines, one per CPU
 *   proxy_ctl park CPULIST HOLDOFF_MS PARK, prints critical_ns=
 *   proxy_ctl unpark CPULIST          UNPARK, prints ns= (synchronous part)
 *   proxy_ctl emulate on|off [low|med|high]
 *   proxy_ctl reset                   RESET
 *   proxy_ctl fuzz N SEED             N random ioctls, then RESET; prints how
 *                                     many calls ended with each errno
 *   proxy_ctl --uid UID CMD...        CMD with the device opened as root and
 *                                     the ioctls made as UID (root-only checks)
 * CPULIST is like "1,3-5". A failed ioctl prints its errno name on stderr and
 * exits 1; bad usage exits 2.
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
#include <unistd.h>

#include "chameleon_proxy.h"

static int fd;
static unsigned int nr_cpu_ids;

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

static void usage(void)
{
	fprintf(stderr, "usage: proxy_ctl info|bad-ioctl|stats|reset\n"
		"       proxy_ctl park CPULIST HOLDOFF_MS | unpark CPULIST\n"
		"       proxy_ctl emulate on|off [low|med|high]\n"
		"       proxy_ctl fuzz N SEED\n");
	exit(2);
}

static unsigned long parse_ul(const char *s, unsigned long max)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || v > max || *s == '-') {
		fprintf(stderr, "bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

static unsigned int mask_words(void)
{
	return (nr_cpu_ids + 63) / 64;
}

/* "1,3-5" into mask words; every id must be below nr_cpu_ids. */
static uint64_t *parse_cpulist(const char *list)
{
	uint64_t *mask = calloc(mask_words(), sizeof(*mask));
	char *copy = strdup(list), *save = NULL, *tok;

	if (!mask || !copy) {
		perror("calloc");
		exit(1);
	}
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *dash = strchr(tok, '-');
		unsigned long lo, hi, c;

		if (dash)
			*dash = 0;
		lo = parse_ul(tok, nr_cpu_ids - 1);
		hi = dash ? parse_ul(dash + 1, nr_cpu_ids - 1) : lo;
		if (hi < lo) {
			fprintf(stderr, "bad range in '%s'\n", list);
			exit(2);
		}
		for (c = lo; c <= hi; c++)
			mask[c / 64] |= 1ULL << (c % 64);
	}
	free(copy);
	return mask;
}

static void get_info(struct chameleon_proxy_info *info)
{
	memset(info, 0xff, sizeof(*info));
	if (ioctl(fd, CHAMELEON_PROXY_IOC_INFO, info))
		die_ioctl("INFO");
}

static int cmd_bad_ioctl(void)
{
	if (ioctl(fd, _IO(CHAMELEON_PROXY_IOC_MAGIC, 0x7f), 0) == 0) {
		fprintf(stderr, "unknown ioctl succeeded\n");
		return 1;
	}
	if (errno != ENOTTY) {
		fprintf(stderr, "unknown ioctl: %s, expected ENOTTY\n", strerror(errno));
		return 1;
	}
	/* A bad user pointer must be refused with EFAULT, not crash. */
	if (ioctl(fd, CHAMELEON_PROXY_IOC_INFO, (void *)16) == 0 || errno != EFAULT) {
		fprintf(stderr, "INFO to a bad pointer: %s, expected EFAULT\n", strerror(errno));
		return 1;
	}
	printf("unknown ioctl -> ENOTTY, bad pointer -> EFAULT\n");
	return 0;
}

#define P(field) printf(#field "=%lld\n", (long long)st.field)

static int cmd_stats(void)
{
	struct chameleon_proxy_cpu_stats *cs = calloc(nr_cpu_ids, sizeof(*cs));
	struct chameleon_proxy_stats st;
	unsigned int i;

	if (!cs) {
		perror("calloc");
		return 1;
	}
	memset(&st, 0, sizeof(st));
	st.cpus = (uintptr_t)cs;
	st.nr_cpus = nr_cpu_ids;
	st.cpu_size = sizeof(*cs);
	if (ioctl(fd, CHAMELEON_PROXY_IOC_STATS, &st))
		die_ioctl("STATS");
	P(lends); P(lends_refused); P(reclaims); P(reclaims_refused);
	P(redirects_applied); P(redirects_skipped); P(restores);
	P(irq_failures); P(irq_last_error); P(managed_skipped); P(irqs_moved);
	P(parks); P(unparks); P(remove_cpu_calls); P(remove_cpu_failures);
	P(remove_cpu_last_error); P(add_cpu_calls); P(add_cpu_failures);
	P(add_cpu_last_error); P(park_critical_ns); P(park_physical_ns);
	P(unpark_critical_ns); P(unpark_physical_ns);
	P(emulate_on); P(emulate_category); P(emulate_failures);
	for (i = 0; i < nr_cpu_ids; i++) {
		const struct chameleon_proxy_cpu_stats *c = &cs[i];

		printf("cpu=%u proxied_by=%d parked=%d offlined=%d duty_pm=%u idle_adjust_us=%d irqs=%llu softirqs=%llu ipis=%llu timers=%llu online=%d pending=%d proxying=%u level=%u live_irqs=%llu live_softirqs=%llu live_ipis=%llu live_timers=%llu\n",
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

	memset(&p, 0, sizeof(p));
	p.mask = (uintptr_t)parse_cpulist(list);
	p.mask_words = mask_words();
	p.holdoff_ms = parse_ul(holdoff, UINT32_MAX);
	if (ioctl(fd, CHAMELEON_PROXY_IOC_PARK, &p))
		die_ioctl("PARK");
	printf("critical_ns=%llu\n", (unsigned long long)p.critical_ns);
	return 0;
}

static int cmd_unpark(const char *list)
{
	struct chameleon_proxy_unpark u;

	memset(&u, 0, sizeof(u));
	u.mask = (uintptr_t)parse_cpulist(list);
	u.mask_words = mask_words();
	if (ioctl(fd, CHAMELEON_PROXY_IOC_UNPARK, &u))
		die_ioctl("UNPARK");
	printf("ns=%llu\n", (unsigned long long)u.critical_ns);
	return 0;
}

static int cmd_emulate(int argc, char **argv)
{
	static const char *const cats[] = { "low", "med", "high" };
	struct chameleon_proxy_emulate e;
	unsigned int i;

	memset(&e, 0, sizeof(e));
	if (argc < 3 || argc > 4)
		usage();
	if (!strcmp(argv[2], "on")) {
		e.on = 1;
		e.category = CHAMELEON_PROXY_CAT_HIGH;
		if (argc == 4) {
			for (i = 0; i < 3 && strcmp(argv[3], cats[i]); i++)
				;
			if (i == 3)
				usage();
			e.category = i;
		}
	} else if (strcmp(argv[2], "off") || argc != 3) {
		usage();
	}
	if (ioctl(fd, CHAMELEON_PROXY_IOC_EMULATE, &e))
		die_ioctl("EMULATE");
	printf("emulate=%s\n", e.on ? cats[e.category] : "off");
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

static int fuzz_one(void)
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
		};

		cmd = cmds[rnd_below(6)];
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
	return ioctl(fd, cmd, arg) ? errno : 0;
}

static int cmd_fuzz(const char *n_arg, const char *seed_arg)
{
	unsigned long n = parse_ul(n_arg, 100000000), i, counts[4096] = { 0 };
	long page = sysconf(_SC_PAGESIZE);
	unsigned char *pages;
	int e;

	rng_state = parse_ul(seed_arg, ULONG_MAX) * 2654435761ULL + 1;
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

	for (i = 0; i < n; i++) {
		e = fuzz_one();
		counts[e >= 0 && e < 4096 ? e : 0]++;
	}
	printf("calls=%lu\n", n);
	for (e = 0; e < 4096; e++)
		if (counts[e])
			printf("%s=%lu\n", errname(e), counts[e]);
	/* Leave the machine as we found it. */
	if (ioctl(fd, CHAMELEON_PROXY_IOC_RESET, 0))
		die_ioctl("RESET");
	printf("reset=ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	struct chameleon_proxy_info info;

	unsigned long uid = ULONG_MAX;

	if (argc >= 3 && !strcmp(argv[1], "--uid")) {
		uid = parse_ul(argv[2], UINT32_MAX - 1);
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
	if (!strcmp(argv[1], "info") && argc == 2) {
		printf("abi_version=%u nr_cpu_ids=%u features=%#llx\n", info.abi_version,
		       info.nr_cpu_ids, (unsigned long long)info.features);
		return 0;
	}
	if (!strcmp(argv[1], "bad-ioctl") && argc == 2)
		return cmd_bad_ioctl();
	if (!strcmp(argv[1], "stats") && argc == 2)
		return cmd_stats();
	if (!strcmp(argv[1], "park") && argc == 4)
		return cmd_park(argv[2], argv[3]);
	if (!strcmp(argv[1], "unpark") && argc == 3)
		return cmd_unpark(argv[2]);
	if (!strcmp(argv[1], "emulate"))
		return cmd_emulate(argc, argv);
	if (!strcmp(argv[1], "reset") && argc == 2) {
		if (ioctl(fd, CHAMELEON_PROXY_IOC_RESET, 0))
			die_ioctl("RESET");
		printf("reset=ok\n");
		return 0;
	}
	if (!strcmp(argv[1], "fuzz") && argc == 4)
		return cmd_fuzz(argv[2], argv[3]);
	usage();
	return 2;
}
