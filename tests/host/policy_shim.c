// SPDX-License-Identifier: GPL-2.0
/*
 * Host build of the BPF policy's pure helpers (bpf/vtime.h and friends): each
 * helper is wrapped in an exported function that src/policy_tests.rs calls, so
 * the host tests exercise the very code the BPF program compiles.
 */
#include <stdint.h>

typedef uint64_t u64;
typedef int64_t s64;
typedef uint32_t u32;
typedef int32_t s32;

#include "vtime.h"

int host_vtime_before(u64 a, u64 b) { return chameleon_vtime_before(a, b); }
u64 host_vtime_charge(u64 delta, u64 weight) { return chameleon_vtime_charge(delta, weight); }
u64 host_vtime_floor(u64 v, u64 clock, u64 credit) { return chameleon_vtime_floor(v, clock, credit); }
u64 host_vtime_rebase(u64 v, u64 from, u64 to) { return chameleon_vtime_rebase(v, from, to); }
u64 host_vtime_advance(u64 clock, u64 v) { return chameleon_vtime_advance(clock, v); }
