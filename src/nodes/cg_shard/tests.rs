use super::*;

fn place(cpu: usize, llc: usize) -> CpuPlace {
    CpuPlace { cpu, core: cpu / 2, llc }
}

/// Interleaved ids (socket 0 holds CPUs 0-3 and 8-11): each CPU counts in
/// its LLC's shard, whatever its id.
#[test]
fn a_cpu_counts_in_its_llcs_shard() {
    let all: Vec<CpuPlace> = (0..16).map(|c| place(c, if c % 8 < 4 { 10 } else { 3 })).collect();
    let s = cg_shards(&all, 16, 4);
    assert_eq!(s, vec![1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0]);
}

/// More LLCs than shards share them in turn; CPUs beyond `nr_cpus` are
/// left out, and a CPU the topology does not name counts in shard 0.
#[test]
fn llcs_beyond_the_shards_share_them() {
    let all: Vec<CpuPlace> = (0..12).map(|c| place(c, c / 2)).collect();
    let s = cg_shards(&all, 14, 4);
    assert_eq!(s, vec![0, 0, 1, 1, 2, 2, 3, 3, 0, 0, 1, 1, 0, 0]);
    assert_eq!(cg_shards(&all, 4, 4).len(), 4);
}

/// LLC queues are numbered by the rank of the LLC's id: dense from 0,
/// whatever the ids, one per LLC.
#[test]
fn llc_ranks_are_dense() {
    let all: Vec<CpuPlace> = (0..8).map(|c| place(c, if c < 4 { 7 } else { 2 })).collect();
    assert_eq!(llc_ranks(&all, 8), vec![1, 1, 1, 1, 0, 0, 0, 0]);
    let many: Vec<CpuPlace> = (0..6).map(|c| place(c, c)).collect();
    assert_eq!(llc_ranks(&many, 6), vec![0, 1, 2, 3, 4, 5]);
}
