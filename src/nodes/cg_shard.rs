//! Which shard of a cgroup's runnable count (`intf.h`, `struct
//! chameleon_cg_weight`) each CPU counts its wakeups and sleeps in: its
//! LLC's, so that the CPUs writing one shard's cache line share a cache and
//! no two LLCs write one line (while there are at most
//! `CHAMELEON_CG_SHARDS` of them; beyond, LLCs share shards in turn). The
//! policy reads the table from its .rodata (`cpu_cg_shard`).

use super::steal::CpuPlace;

/// Shard per CPU id, for CPU ids below `nr_cpus`: the rank of the CPU's LLC
/// among the machine's LLCs, modulo `nr_shards`. CPUs not in `all` get 0.
pub fn cg_shards(all: &[CpuPlace], nr_cpus: usize, nr_shards: usize) -> Vec<u8> {
    let mut llcs: Vec<usize> = all.iter().map(|p| p.llc).collect();
    llcs.sort_unstable();
    llcs.dedup();
    let mut shard = vec![0u8; nr_cpus];
    for p in all.iter().filter(|p| p.cpu < nr_cpus) {
        let rank = llcs.binary_search(&p.llc).unwrap_or(0);
        shard[p.cpu] = (rank % nr_shards.max(1)) as u8;
    }
    shard
}

#[cfg(test)]
mod tests;
