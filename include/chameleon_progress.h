/* SPDX-License-Identifier: GPL-2.0 */
/*
 * chameleon_progress.h: tell scx_chameleon how fast a thread progresses, so
 * that a `tax=auto` tag can price its borrowing by what fusing really buys it
 * (the agent measures progress fused and native and sets the thread's tax
 * from the speed-up; see README, "Automatic tax").
 *
 *	chameleon_progress_bump();	// once per unit of work, in the thread doing it
 *
 * or, to keep the pointer yourself:
 *
 *	struct chameleon_progress *p = chameleon_progress_open();
 *	...
 *	chameleon_progress_add(p, n);	// p may be NULL: then it does nothing
 *	...
 *	chameleon_progress_close(p);	// removes the file
 *
 * Each thread has its own counter: a 16-byte file
 * /dev/shm/chameleon-progress.<tid> (magic, version, u64 count), created
 * mode 0600 by the thread and mapped shared. An increment is a plain store
 * (one writer per counter), no system call and no atomic instruction. The
 * agent (root) reads the file every 250 ms and trusts it only as far as it
 * must: a regular file, not a symlink, owned by the thread's effective uid,
 * with this magic and version; a count that goes backwards or jumps
 * absurdly is ignored. A file left behind by a thread that exited without
 * closing it is harmless (it never moves again), but should be removed.
 *
 * Header only; needs Linux and C11 (or GNU C) thread-local storage.
 */
#ifndef CHAMELEON_PROGRESS_H
#define CHAMELEON_PROGRESS_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define CHAMELEON_PROGRESS_DIR		"/dev/shm"
#define CHAMELEON_PROGRESS_MAGIC	0x47504843u	/* "CHPG" (little-endian) */
#define CHAMELEON_PROGRESS_VERSION	1u

struct chameleon_progress {
	uint32_t magic;
	uint32_t version;
	uint64_t count;
};

static inline void chameleon_progress_path(char *buf, size_t len, long tid)
{
	snprintf(buf, len, CHAMELEON_PROGRESS_DIR "/chameleon-progress.%ld", tid);
}

/*
 * Create (or take over) the calling thread's counter, from 0. NULL if it
 * cannot: no /dev/shm, or the name is taken by something not ours (another
 * user's file: the directory is shared by everyone).
 */
static inline struct chameleon_progress *chameleon_progress_open(void)
{
	struct chameleon_progress *p;
	struct stat st;
	char path[64];
	int fd;

	chameleon_progress_path(path, sizeof(path), syscall(SYS_gettid));
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    ftruncate(fd, sizeof(*p))) {
		close(fd);
		return NULL;
	}
	p = mmap(NULL, sizeof(*p), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	/* The count is zeroed before the header says the record is valid. */
	__atomic_store_n(&p->count, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&p->version, CHAMELEON_PROGRESS_VERSION, __ATOMIC_RELEASE);
	__atomic_store_n(&p->magic, CHAMELEON_PROGRESS_MAGIC, __ATOMIC_RELEASE);
	return p;
}

/* Count @n units of work. Only the thread that opened @p may call this. */
static inline void chameleon_progress_add(struct chameleon_progress *p, uint64_t n)
{
	/* One writer: a load and a store, each whole (no torn count to read). */
	if (p)
		__atomic_store_n(&p->count, __atomic_load_n(&p->count, __ATOMIC_RELAXED) + n,
				 __ATOMIC_RELAXED);
}

/* Unmap and remove the calling thread's counter. */
static inline void chameleon_progress_close(struct chameleon_progress *p)
{
	char path[64];

	if (!p)
		return;
	munmap(p, sizeof(*p));
	chameleon_progress_path(path, sizeof(path), syscall(SYS_gettid));
	unlink(path);
}

/*
 * The simplest use: one call per unit of work; the thread's counter is
 * opened on its first call (once: if that fails, bumps cost a test). Each
 * file that includes this header has its own per-thread pointer: bump from
 * one compilation unit, or pass the pointer of chameleon_progress_open().
 */
static inline void chameleon_progress_bump(void)
{
	static __thread struct chameleon_progress *p;
	static __thread int tried;

	if (!tried) {
		tried = 1;
		p = chameleon_progress_open();
	}
	chameleon_progress_add(p, 1);
}

#endif /* CHAMELEON_PROGRESS_H */
