/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The role of a CPU: one word per CPU, the single source of truth for what
 * the CPU does for execution objects and parking. Pure (no BPF helpers), so
 * that the host tests run exactly this code (tests/host: tests/host/src/role.rs
 * explores every interleaving of concurrent transitions on small machines).
 *
 * The word is (with + 1) << CHAMELEON_ROLE_SHIFT | kind, where with is the
 * representative a LENT CPU is lent to (0 otherwise). It changes only by
 * compare-and-swap from a word read just before, to chameleon_role_step()'s
 * answer for one transition, so a CPU has exactly one role at every instant
 * and two CPUs racing for it cannot both win:
 *
 *            fuse_begin (the CPU itself, in running())
 *   NATIVE ------------------------------------------> FUSING
 *     ^  ^ \                                          |     |
 *     |  |  \ lend(rep) (rep FUSING)      fuse_abort  |     | fuse_done
 *     |  |   v                                        |     v
 *     |  |  LENT(rep) --give_back(rep)--> NATIVE  <---+    REP
 *     |  |                                                  |
 *     |  +---------------- split_done ---- SPLITTING <------+ split_begin
 *     |                                                       (any CPU)
 *     +---- unpark ---- PARKED <---- park (from NATIVE only)
 *
 * Invariants this gives, and the policy counts if ever seen broken
 * (role.bpf.c, role_check()):
 * - a CPU is never both a representative and lent (one word);
 * - a CPU is lent only by a representative that is FUSING at that moment
 *   (try_fuse() holds FUSING while it lends), and given back only by its own
 *   representative, which is FUSING (abort) or SPLITTING: so a LENT(rep)
 *   CPU's rep is FUSING, REP or SPLITTING, never NATIVE, LENT or PARKED;
 * - a parked CPU is neither lent nor a representative: parking waits for
 *   the split of whatever object the CPU is part of.
 */
#ifndef __CHAMELEON_ROLE_H
#define __CHAMELEON_ROLE_H

#include "intf.h"

#define CHAMELEON_ROLE_KIND	((1U << CHAMELEON_ROLE_SHIFT) - 1)
/* No transition: the CAS is not tried. */
#define CHAMELEON_ROLE_INVALID	0xffffffffU

/* What may happen to a CPU's role. */
enum chameleon_role_event {
	CHAMELEON_RE_FUSE_BEGIN	= 0,	/* the CPU starts borrowing for its owner */
	CHAMELEON_RE_FUSE_DONE	= 1,	/* ... and has borrowed what it fuses */
	CHAMELEON_RE_FUSE_ABORT	= 2,	/* ... or gave up (nothing to borrow, lost a race) */
	CHAMELEON_RE_LEND	= 3,	/* a FUSING representative (arg) borrows the CPU */
	CHAMELEON_RE_GIVE_BACK	= 4,	/* the representative (arg) returns it */
	CHAMELEON_RE_SPLIT_BEGIN = 5,	/* anyone ends the CPU's object */
	CHAMELEON_RE_SPLIT_DONE	= 6,	/* ... once its lent CPUs are given back */
	CHAMELEON_RE_PARK	= 7,	/* the agent parks the CPU */
	CHAMELEON_RE_UNPARK	= 8,
	CHAMELEON_RE_NR		= 9,
};

static inline u32 chameleon_role_kind(u32 word)
{
	return word & CHAMELEON_ROLE_KIND;
}

/*
 * May a CPU of role @kind take any task now? Not a representative (its
 * owner's), a lent CPU (its object's) nor a parked one: idle searches look
 * among the others (role.bpf.c, placeable), and a CPU of those three kinds
 * stays refused until its role changes.
 */
static inline int chameleon_role_placeable(u32 kind)
{
	return kind != CHAMELEON_ROLE_REP && kind != CHAMELEON_ROLE_LENT &&
	       kind != CHAMELEON_ROLE_PARKED;
}

/* The representative a LENT word names, -1 for any other word. */
static inline s32 chameleon_role_with(u32 word)
{
	if (chameleon_role_kind(word) != CHAMELEON_ROLE_LENT)
		return -1;
	return (s32)(word >> CHAMELEON_ROLE_SHIFT) - 1;
}

static inline u32 chameleon_role_lent(s32 rep)
{
	return (u32)(rep + 1) << CHAMELEON_ROLE_SHIFT | CHAMELEON_ROLE_LENT;
}

/*
 * The word after @ev (with @arg, the representative for LEND and GIVE_BACK)
 * on a CPU whose word is @old, or CHAMELEON_ROLE_INVALID where the state
 * machine above has no such edge.
 */
static inline u32 chameleon_role_step(u32 old, u32 ev, s32 arg)
{
	u32 kind = chameleon_role_kind(old);

	switch (ev) {
	case CHAMELEON_RE_FUSE_BEGIN:
		return old == CHAMELEON_ROLE_NATIVE ? CHAMELEON_ROLE_FUSING : CHAMELEON_ROLE_INVALID;
	case CHAMELEON_RE_FUSE_DONE:
		return kind == CHAMELEON_ROLE_FUSING ? CHAMELEON_ROLE_REP : CHAMELEON_ROLE_INVALID;
	case CHAMELEON_RE_FUSE_ABORT:
		return kind == CHAMELEON_ROLE_FUSING ? CHAMELEON_ROLE_NATIVE : CHAMELEON_ROLE_INVALID;
	case CHAMELEON_RE_LEND:
		if (arg < 0 || arg >= CHAMELEON_MAX_CPUS || old != CHAMELEON_ROLE_NATIVE)
			return CHAMELEON_ROLE_INVALID;
		return chameleon_role_lent(arg);
	case CHAMELEON_RE_GIVE_BACK:
		if (arg < 0 || old != chameleon_role_lent(arg))
			return CHAMELEON_ROLE_INVALID;
		return CHAMELEON_ROLE_NATIVE;
	case CHAMELEON_RE_SPLIT_BEGIN:
		return kind == CHAMELEON_ROLE_REP ? CHAMELEON_ROLE_SPLITTING : CHAMELEON_ROLE_INVALID;
	case CHAMELEON_RE_SPLIT_DONE:
		return kind == CHAMELEON_ROLE_SPLITTING ? CHAMELEON_ROLE_NATIVE : CHAMELEON_ROLE_INVALID;
	case CHAMELEON_RE_PARK:
		return old == CHAMELEON_ROLE_NATIVE ? CHAMELEON_ROLE_PARKED : CHAMELEON_ROLE_INVALID;
	case CHAMELEON_RE_UNPARK:
		return kind == CHAMELEON_ROLE_PARKED ? CHAMELEON_ROLE_NATIVE : CHAMELEON_ROLE_INVALID;
	}
	return CHAMELEON_ROLE_INVALID;
}

/*
 * Is the pair (@word of a LENT CPU, @rep_word of the representative it
 * names) consistent? The representative holds its object (FUSING while it
 * lends, REP, SPLITTING while it gives back). Any other word for a LENT
 * CPU is a broken invariant.
 */
static inline int chameleon_role_lent_ok(u32 word, u32 rep_word)
{
	u32 k = chameleon_role_kind(rep_word);

	if (chameleon_role_kind(word) != CHAMELEON_ROLE_LENT)
		return 1;
	return k == CHAMELEON_ROLE_FUSING || k == CHAMELEON_ROLE_REP ||
	       k == CHAMELEON_ROLE_SPLITTING;
}

#endif /* __CHAMELEON_ROLE_H */
