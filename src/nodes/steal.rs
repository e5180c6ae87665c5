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
mod tests;
