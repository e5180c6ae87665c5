//! Nodes (Chameleon §3.2): groups of CPUs whose objects a node manager builds.
//! One node per LLC by default, or as given by `--node-cpus`. Within a node
//! CPUs are listed in *slot order* — cores in id order, the SMT siblings of a
//! core next to each other — so that an aligned block of 2^k slots is an SMT
//! pair, a pair of neighbouring cores, and so on.

use anyhow::{bail, Context, Result};
use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: usize,
    /// CPU ids in slot order.
    pub slots: Vec<usize>,
}

/// Nodes from the machine's topology: one per LLC, including CPUs that are
/// offline now (they may come online; the manager skips offline slots).
pub fn from_topology() -> Result<Vec<Node>> {
    let topo = scx_utils::Topology::new().context("reading the CPU topology")?;
    let mut nodes = Vec::new();
    for (i, llc) in topo.all_llcs.values().enumerate() {
        let mut cores: Vec<Vec<usize>> =
            llc.cores.values().map(|core| core.cpus.keys().copied().collect()).collect();
        cores.sort();
        nodes.push(Node { id: i, slots: cores.concat() });
    }
    if nodes.is_empty() {
        bail!("the topology has no LLC");
    }
    Ok(nodes)
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
        nodes.push(Node { id: i, slots: cpus });
    }
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_node_lists() {
        let nodes = parse_nodes("0-3;4,5,6,7", 8).unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[1].slots, vec![4, 5, 6, 7]);
    }

    #[test]
    fn refuses_bad_node_lists() {
        assert!(parse_nodes("0-3;3-5", 8).is_err(), "overlap");
        assert!(parse_nodes("0-9", 8).is_err(), "beyond the CPUs");
        assert!(parse_nodes("0-3;", 8).is_err(), "empty node");
        assert!(parse_nodes("a-b", 8).is_err(), "garbage");
        let e = parse_nodes("0-4294967295", 8).unwrap_err().to_string();
        assert!(e.contains("CPU 4294967295 does not exist"), "{e}");
        assert!(parse_nodes("0-99999999999999999999999", 8).is_err(), "overflow");
        assert!(parse_nodes("5-2", 8).is_err(), "downwards");
    }
}
