//! Nodes (Chameleon §3.2): groups of CPUs whose objects a node manager builds.
//! One node per LLC by default, or as given by `--node-cpus`. Within a node
//! CPUs are listed in *slot order* — cores in id order, the SMT siblings of a
//! core next to each other — so that an aligned block of 2^k slots is an SMT
//! pair, a pair of neighbouring cores, and so on.
//!
//! Hybrid CPUs (P and E cores, or any mix of capacities): the cores of an
//! LLC are split into one node per capacity, so that no object mixes a fast
//! core with a slow one (its virtual threads would wait on the slow one),
//! unless `--mix-core-types`; nodes are ordered fastest first, so that the
//! node manager, which takes the first block that fits, puts a task's object
//! and its representative on the fastest cores free. Capacities come from
//! the kernel (cpu_capacity, via scx_utils) or `--cpu-capacity`.

use anyhow::{bail, Context, Result};
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: usize,
    /// CPU ids in slot order.
    pub slots: Vec<usize>,
    /// Its cores' capacity (1024: the fastest, or not known to differ).
    pub cap: u32,
}

/// How the topology becomes nodes: capacities that override the kernel's
/// (`--cpu-capacity`), and whether cores of different capacities may share a
/// node (`--mix-core-types`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopologyOpts {
    pub capacity: BTreeMap<usize, u32>,
    pub mix_core_types: bool,
}

/// The CPUs the kernel has online now.
pub fn online_cpus() -> Result<Vec<usize>> {
    let list = std::fs::read_to_string("/sys/devices/system/cpu/online").context("reading /sys/devices/system/cpu/online")?;
    scx_utils::read_cpulist(list.trim())
}

/// Nodes from the machine's topology: one per LLC and core capacity,
/// including CPUs that are offline now (they may come online; the manager
/// skips offline slots).
pub fn from_topology(opts: &TopologyOpts) -> Result<Vec<Node>> {
    let topo = scx_utils::Topology::new().context("reading the CPU topology")?;
    let llcs = topo
        .all_llcs
        .values()
        .map(|llc| {
            llc.cores
                .values()
                .map(|core| {
                    let cpus: Vec<usize> = core.cpus.keys().copied().collect();
                    // A core is as fast as its fastest thread.
                    let cap = core.cpus.values().map(|c| capacity_of(opts, c)).max().unwrap_or(1024);
                    (cpus, cap)
                })
                .collect()
        })
        .collect();
    let nodes = nodes_from(llcs, opts.mix_core_types);
    if nodes.is_empty() {
        bail!("the topology has no LLC");
    }
    Ok(nodes)
}

/// A CPU's capacity: `--cpu-capacity`'s, else the kernel's.
fn capacity_of(opts: &TopologyOpts, c: &scx_utils::Cpu) -> u32 {
    opts.capacity.get(&c.id).copied().unwrap_or(c.kernel_cpu_capacity.unwrap_or(c.cpu_capacity) as u32)
}

/// The fast CPUs (bpf/fast.bpf.c): those of the top capacity, from the
/// machine's topology and `--cpu-capacity`. None if the topology cannot be
/// read or every CPU has the same capacity.
pub fn fast_cpus_of_topology(opts: &TopologyOpts) -> Vec<usize> {
    let Ok(topo) = scx_utils::Topology::new() else { return Vec::new() };
    fast_cpus(topo.all_cpus.values().map(|c| (c.id, capacity_of(opts, c))))
}

/// The CPUs of the top capacity among (CPU, capacity), or none if all have
/// the same: a machine without slow CPUs has nothing to prefer.
pub fn fast_cpus(caps: impl IntoIterator<Item = (usize, u32)>) -> Vec<usize> {
    let caps: BTreeMap<usize, u32> = caps.into_iter().collect();
    let (Some(&top), Some(&low)) = (caps.values().max(), caps.values().min()) else { return Vec::new() };
    if top == low {
        return Vec::new();
    }
    caps.into_iter().filter(|&(_, c)| c == top).map(|(cpu, _)| cpu).collect()
}

/// Nodes from LLCs given as their cores (CPUs, capacity): each LLC split by
/// capacity unless `mix`, cores in id order within a node, nodes fastest
/// first (an LLC's order kept among equals).
pub fn nodes_from(llcs: Vec<Vec<(Vec<usize>, u32)>>, mix: bool) -> Vec<Node> {
    let mut groups: Vec<(u32, Vec<Vec<usize>>)> = Vec::new();
    for cores in llcs {
        let mut by_cap: BTreeMap<u32, Vec<Vec<usize>>> = BTreeMap::new();
        let mut fastest = 0;
        for (mut cpus, cap) in cores {
            cpus.sort_unstable();
            let key = if mix { 0 } else { cap };
            fastest = fastest.max(cap);
            by_cap.entry(key).or_default().push(cpus);
        }
        for (key, mut cores) in by_cap.into_iter().rev() {
            cores.sort();
            groups.push((if mix { fastest } else { key }, cores));
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.0));
    groups.into_iter().enumerate().map(|(id, (cap, cores))| Node { id, slots: cores.concat(), cap }).collect()
}

/// `--cpu-capacity`: "LIST=CAP" items separated by ';' (e.g. "0-3=1024;4-11=512"),
/// capacities 1..=1024 as the kernel scales them.
pub fn parse_capacities(spec: &str, nr_cpus: usize) -> Result<BTreeMap<usize, u32>> {
    let mut out = BTreeMap::new();
    for item in spec.split(';').map(str::trim).filter(|i| !i.is_empty()) {
        let (list, cap) = item
            .split_once('=')
            .with_context(|| format!("--cpu-capacity {item:?}: expected CPULIST=CAPACITY (e.g. 0-3=1024)"))?;
        let cap: u32 = cap
            .trim()
            .parse()
            .ok()
            .filter(|c| (1..=1024).contains(c))
            .with_context(|| format!("--cpu-capacity {item:?}: capacity {:?}: expected 1..=1024", cap.trim()))?;
        for n in list.split([',', '-']).map(str::trim) {
            match n.parse::<usize>() {
                Ok(c) if c >= nr_cpus => bail!("--cpu-capacity {item:?}: CPU {c} does not exist ({nr_cpus} possible CPUs)"),
                Ok(_) => {}
                Err(_) => bail!("--cpu-capacity {item:?}: {n:?} is not a CPU number"),
            }
        }
        let cpus = scx_utils::read_cpulist(list.trim()).with_context(|| format!("--cpu-capacity {item:?}"))?;
        if cpus.is_empty() {
            bail!("--cpu-capacity {item:?}: no CPU (a range must go upwards)");
        }
        for c in cpus {
            if out.insert(c, cap).is_some() {
                bail!("--cpu-capacity: CPU {c} given twice");
            }
        }
    }
    if out.is_empty() {
        bail!("--cpu-capacity {spec:?}: no CPU given");
    }
    Ok(out)
}

/// Nodes from `--node-cpus`: CPU lists separated by ';' (e.g. "0-11;12-23").
/// Each list is taken in the order given; ranges give adjacent ids.
pub fn parse_nodes(spec: &str, nr_cpus: usize) -> Result<Vec<Node>> {
    let mut seen = BTreeSet::new();
    let mut nodes = Vec::new();
    for (i, part) in spec.split(';').enumerate() {
        let part = part.trim();
        if part.is_empty() {
            bail!("--node-cpus {spec:?}: node {i} is empty");
        }
        // Bound every number before expanding ranges: "0-4294967295" must be
        // an error, not four billion entries.
        for n in part.split([',', '-']).map(str::trim) {
            match n.parse::<usize>() {
                Ok(c) if c >= nr_cpus => bail!("--node-cpus: CPU {c} does not exist ({nr_cpus} possible CPUs)"),
                Ok(_) => {}
                Err(_) => bail!("--node-cpus: node {i} {part:?}: {n:?} is not a CPU number"),
            }
        }
        let cpus = scx_utils::read_cpulist(part).with_context(|| format!("--node-cpus: node {i} {part:?}"))?;
        if cpus.is_empty() {
            bail!("--node-cpus: node {i} {part:?} has no CPU (a range must go upwards)");
        }
        for &c in &cpus {
            if c >= nr_cpus {
                bail!("--node-cpus: CPU {c} does not exist ({nr_cpus} possible CPUs)");
            }
            if !seen.insert(c) {
                bail!("--node-cpus: CPU {c} is in two nodes");
            }
        }
        nodes.push(Node { id: i, slots: cpus, cap: 1024 });
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests;
