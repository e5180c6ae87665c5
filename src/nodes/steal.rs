//! Where each CPU steals from (BPF map `steal_orders`, `intf.h`): its SMT
//! siblings, then the other CPUs of its LLC, then the rest, each group
//! nearest id first. The policy looks at the siblings and then at a bounded,
//! rotating window of the rest, so a dispatch never walks every CPU. Pure,
//! so the order is host-tested; the agent writes it before attaching.

use anyhow::{Context, Result};

/// One CPU's place in the topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuPlace {
    pub cpu: usize,
    /// Unique across the machine.
    pub core: usize,
    pub llc: usize,
}

/// `cpu`'s steal order among `all`: (CPUs nearest first, how many of them
/// are its SMT siblings, at the head).
pub fn order(cpu: CpuPlace, all: &[CpuPlace]) -> (Vec<usize>, usize) {
    let mut others: Vec<CpuPlace> = all.iter().copied().filter(|c| c.cpu != cpu.cpu).collect();
    others.sort_by_key(|c| (c.core != cpu.core, c.llc != cpu.llc, c.cpu.abs_diff(cpu.cpu), c.cpu));
    let siblings = others.iter().take_while(|c| c.core == cpu.core).count();
    (others.iter().map(|c| c.cpu).collect(), siblings)
}

/// Every CPU of the machine with its core and LLC (scx_utils' topology).
pub fn places() -> Result<Vec<CpuPlace>> {
    let topo = scx_utils::Topology::new().context("reading the CPU topology")?;
    let mut all = Vec::new();
    for (&core_id, core) in &topo.all_cores {
        for &cpu in core.cpus.keys() {
            all.push(CpuPlace { cpu, core: core_id, llc: core.llc_id });
        }
    }
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2 LLCs x 2 cores x 2 threads, siblings numbered n and n+4 as on many x86s.
    fn machine() -> Vec<CpuPlace> {
        (0..8).map(|cpu| CpuPlace { cpu, core: cpu % 4, llc: (cpu % 4) / 2 }).collect()
    }

    #[test]
    fn sibling_then_llc_then_the_rest() {
        let all = machine();
        let (o, near) = order(all[0], &all);
        assert_eq!(near, 1);
        assert_eq!(o[0], 4, "SMT sibling first");
        assert_eq!(&o[1..3], &[1, 5], "then the other core of the LLC, nearest id first");
        assert_eq!(&o[3..], &[2, 3, 6, 7], "then the other LLC");
        let (o, _) = order(all[6], &all);
        assert_eq!(o, vec![2, 7, 3, 5, 4, 1, 0]);
    }

    #[test]
    fn every_other_cpu_once() {
        let all = machine();
        for &c in &all {
            let (mut o, _) = order(c, &all);
            o.sort();
            let want: Vec<usize> = (0..8).filter(|&x| x != c.cpu).collect();
            assert_eq!(o, want);
        }
    }
}
