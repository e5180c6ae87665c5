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
    llc_rank_table(all, nr_cpus).into_iter().map(|r| (r % nr_shards.max(1)) as u8).collect()
}

/// Each CPU's LLC as a dense index, 0 .. the number of LLCs (the policy's
/// `cpu_llc`, whose LLC queues are numbered so), capped at 255. CPUs not in
/// `all` get 0.
pub fn llc_ranks(all: &[CpuPlace], nr_cpus: usize) -> Vec<u8> {
    llc_rank_table(all, nr_cpus).into_iter().map(|r| r.min(255) as u8).collect()
}

/// The rank of each CPU's LLC among the machine's LLCs, by LLC id.
fn llc_rank_table(all: &[CpuPlace], nr_cpus: usize) -> Vec<usize> {
    let mut llcs: Vec<usize> = all.iter().map(|p| p.llc).collect();
    llcs.sort_unstable();
    llcs.dedup();
    let mut rank = vec![0usize; nr_cpus];
    for p in all.iter().filter(|p| p.cpu < nr_cpus) {
        rank[p.cpu] = llcs.binary_search(&p.llc).unwrap_or(0);
    }
    rank
}

#[cfg(test)]
mod tests;
