// SPDX-License-Identifier: GPL-2.0
/*
 * wakeup_bench: request/worker wakeup latency (a benchmark, bench/overhead).
 *   wakeup_bench [-m MSG_THREADS] [-w WORKERS_PER_MSG] [-r SECONDS] [-s SPIN_ITERS]
 * Each of the MSG_THREADS message threads owns WORKERS_PER_MSG worker
 * threads and serves requests in batches, with no think time: it posts one
 * request to each of its workers (writing the wake time just before each
 * futex wake), waits until all of them have completed, and posts the next
 * batch at once. A woken worker takes the time as soon as it runs, does a
 * fixed amount of work (SPIN_ITERS iterations of an empty loop: a count, not
 * a time, so that a slower CPU share shows as a longer request), takes the
 * time again and reports completion (the last of a batch wakes its message
 * thread). All threads are plain SCHED_OTHER, with the caller's affinity.
 * Measured per request (CLOCK_MONOTONIC):
 *   wakeup:  the waker's timestamp just before the wake -> the worker running;
 *   request: the batch posted (one timestamp before the first wake) -> that
 *            worker's completion (fan-out, wakeup and the work);
 * and the requests completed per second of the run. Prints one line:
 * "wakeup_p50_ns=A wakeup_p99_ns=B request_p50_ns=C request_p99_ns=D rps=E".
 * Percentiles come from log-linear histograms (64 sub-buckets per power of
 * two, values reported at the bucket's middle: within 0.8 %).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* Histogram: values below 2^SUB_BITS exactly, then 2^SUB_BITS buckets per
 * power of two up to 2^63. */
#define SUB_BITS 6
#define SUB (1 << SUB_BITS)
#define NBUCKETS (SUB + (64 - SUB_BITS) * SUB)

struct hist {
	uint64_t n[NBUCKETS];
	uint64_t count;
};

static unsigned int bucket(uint64_t v)
{
	unsigned int k;

	if (v < SUB)
		return v;
	k = 63 - __builtin_clzll(v);	/* >= SUB_BITS */
	return SUB + (k - SUB_BITS) * SUB + ((v >> (k - SUB_BITS)) & (SUB - 1));
}

/* The middle of bucket b's range of values. */
static uint64_t bucket_value(unsigned int b)
{
	unsigned int k;
	uint64_t width, low;

	if (b < SUB)
		return b;
	k = (b - SUB) / SUB + SUB_BITS;
	width = 1ULL << (k - SUB_BITS);
	low = (1ULL << k) + (uint64_t)((b - SUB) % SUB) * width;
	return low + width / 2;
}

static void hist_add(struct hist *h, uint64_t v)
{
	h->n[bucket(v)]++;
	h->count++;
}

static void hist_merge(struct hist *to, const struct hist *from)
{
	for (unsigned int b = 0; b < NBUCKETS; b++)
		to->n[b] += from->n[b];
	to->count += from->count;
}

/* The value at percentile p: the bucket holding the ceil(p% x count)-th
 * smallest sample. */
static uint64_t hist_pct(const struct hist *h, double p)
{
	uint64_t rank, seen = 0;

	if (!h->count)
		return 0;
	rank = (uint64_t)(p / 100.0 * h->count);
	if (rank < p / 100.0 * h->count)
		rank++;
	if (rank < 1)
		rank = 1;
	for (unsigned int b = 0; b < NBUCKETS; b++) {
		seen += h->n[b];
		if (seen >= rank)
			return bucket_value(b);
	}
	return bucket_value(NBUCKETS - 1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void futex_wait(atomic_int *word, int val)
{
	/* EAGAIN (the word changed) and EINTR: the caller looks again. */
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(atomic_int *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

enum { IDLE, POSTED, QUIT };

struct msg;

struct worker {
	/* IDLE -> POSTED by the message thread; back to IDLE when done. */
	atomic_int state;
	uint64_t req_ns;	/* the batch posted */
	uint64_t wake_ns;	/* just before this worker's wake */
	struct msg *msg;
	pthread_t tid;
	struct hist wakeup, request;
} __attribute__((aligned(64)));

struct msg {
	atomic_int pending;	/* workers of the batch not done yet */
	struct worker *workers;
	int nworkers;
	pthread_t tid;
} __attribute__((aligned(64)));

static atomic_int stop;
static unsigned long spin_iters;
static pthread_barrier_t start;

static void spin(unsigned long iters)
{
	for (unsigned long i = 0; i < iters; i++)
		__asm__ __volatile__("" : : : "memory");
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t t_run, t_done;
	int s;

	for (;;) {
		while ((s = atomic_load_explicit(&w->state, memory_order_acquire)) == IDLE)
			futex_wait(&w->state, IDLE);
		if (s == QUIT)
			return NULL;
		t_run = now_ns();
		hist_add(&w->wakeup, t_run - w->wake_ns);
		spin(spin_iters);
		t_done = now_ns();
		hist_add(&w->request, t_done - w->req_ns);
		atomic_store_explicit(&w->state, IDLE, memory_order_release);
		if (atomic_fetch_sub(&w->msg->pending, 1) == 1)
			futex_wake(&w->msg->pending);
	}
}

static void *msg_main(void *arg)
{
	struct msg *m = arg;
	uint64_t t;
	int p;

	pthread_barrier_wait(&start);
	while (!atomic_load(&stop)) {
		atomic_store(&m->pending, m->nworkers);
		t = now_ns();
		for (int i = 0; i < m->nworkers; i++) {
			struct worker *w = &m->workers[i];

			w->req_ns = t;
			w->wake_ns = now_ns();
			atomic_store_explicit(&w->state, POSTED, memory_order_release);
			futex_wake(&w->state);
		}
		while ((p = atomic_load(&m->pending)) != 0)
			futex_wait(&m->pending, p);
	}
	for (int i = 0; i < m->nworkers; i++) {
		atomic_store(&m->workers[i].state, QUIT);
		futex_wake(&m->workers[i].state);
	}
	return NULL;
}

static long num(const char *s, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min) {
		fprintf(stderr, "wakeup_bench: bad number '%s'\n", s);
		exit(2);
	}
	return v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: wakeup_bench [-m MSG_THREADS] [-w WORKERS_PER_MSG] [-r SECONDS] [-s SPIN_ITERS]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	int opt, nmsg = 2, nworkers = 4, secs = 5;
	struct hist *wakeup, *request;
	struct timespec run;
	struct msg *msgs;
	uint64_t t0, t1;
	int err;

	spin_iters = 10000;
	while ((opt = getopt(argc, argv, "m:w:r:s:")) != -1) {
		switch (opt) {
		case 'm': nmsg = num(optarg, 1); break;
		case 'w': nworkers = num(optarg, 1); break;
		case 'r': secs = num(optarg, 1); break;
		case 's': spin_iters = num(optarg, 0); break;
		default: usage();
		}
	}
	if (optind != argc || nmsg > 1024 || nworkers > 1024)
		usage();

	msgs = aligned_alloc(64, sizeof(*msgs) * nmsg);
	wakeup = calloc(1, sizeof(*wakeup));
	request = calloc(1, sizeof(*request));
	if (!msgs || !wakeup || !request) {
		perror("wakeup_bench: alloc");
		return 1;
	}
	memset(msgs, 0, sizeof(*msgs) * nmsg);
	pthread_barrier_init(&start, NULL, nmsg + 1);
	for (int i = 0; i < nmsg; i++) {
		struct msg *m = &msgs[i];

		m->nworkers = nworkers;
		m->workers = aligned_alloc(64, sizeof(*m->workers) * nworkers);
		if (!m->workers) {
			perror("wakeup_bench: alloc");
			return 1;
		}
		memset(m->workers, 0, sizeof(*m->workers) * nworkers);
		for (int j = 0; j < nworkers; j++) {
			m->workers[j].msg = m;
			err = pthread_create(&m->workers[j].tid, NULL, worker_main, &m->workers[j]);
			if (err) {
				fprintf(stderr, "wakeup_bench: pthread_create: %s\n", strerror(err));
				return 1;
			}
		}
		err = pthread_create(&m->tid, NULL, msg_main, m);
		if (err) {
			fprintf(stderr, "wakeup_bench: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}

	/* Every thread exists before the first request: none of their setup
	 * is measured. */
	pthread_barrier_wait(&start);
	t0 = now_ns();
	run.tv_sec = secs;
	run.tv_nsec = 0;
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &run, &run) == EINTR)
		;
	atomic_store(&stop, 1);
	for (int i = 0; i < nmsg; i++) {
		pthread_join(msgs[i].tid, NULL);
		for (int j = 0; j < nworkers; j++) {
			pthread_join(msgs[i].workers[j].tid, NULL);
			hist_merge(wakeup, &msgs[i].workers[j].wakeup);
			hist_merge(request, &msgs[i].workers[j].request);
		}
	}
	/* Up to the last batch's completion: every request counted finished
	 * by then. */
	t1 = now_ns();

	printf("wakeup_p50_ns=%llu wakeup_p99_ns=%llu request_p50_ns=%llu request_p99_ns=%llu rps=%.0f requests=%llu\n",
	       (unsigned long long)hist_pct(wakeup, 50), (unsigned long long)hist_pct(wakeup, 99),
	       (unsigned long long)hist_pct(request, 50), (unsigned long long)hist_pct(request, 99),
	       request->count * 1e9 / (double)(t1 - t0), (unsigned long long)request->count);
	return request->count ? 0 : 1;
}
