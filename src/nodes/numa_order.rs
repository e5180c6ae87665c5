//! Where an idle search goes when a task's NUMA node has no idle CPU (BPF
//! rodata `node_order`, `idle_beyond()` in base.bpf.c): for each node with
//! CPUs, the other such nodes, nearest first by the firmware's distance
//! table, ties by id. Pure, so host-tested; the agent writes it before
//! attaching.

/// A NUMA node as the topology reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaNode {
    pub id: usize,
    /// Its distance to each online node, in increasing id order
    /// (`/sys/devices/system/node/nodeN/distance`).
    pub distance: Vec<usize>,
    pub has_cpus: bool,
}

/// Row `id` of the table, for each node with CPUs: the other nodes with
/// CPUs, nearest first. `None` when a node with CPUs has an id at or above
/// `max` (the table's side): the policy then keeps one idle mask.
pub fn orders(nodes: &[NumaNode], max: usize) -> Option<Vec<Vec<usize>>> {
    let mut online: Vec<usize> = nodes.iter().map(|n| n.id).collect();
    online.sort_unstable();
    let with_cpus: Vec<&NumaNode> = nodes.iter().filter(|n| n.has_cpus).collect();
    if with_cpus.iter().any(|n| n.id >= max) {
        return None;
    }
    let mut rows = vec![Vec::new(); max];
    for from in &with_cpus {
        // A distance the table does not give counts as the farthest.
        let dist = |to: usize| {
            online.iter().position(|&id| id == to).and_then(|i| from.distance.get(i).copied()).unwrap_or(usize::MAX)
        };
        let mut others: Vec<usize> = with_cpus.iter().map(|n| n.id).filter(|&id| id != from.id).collect();
        others.sort_by_key(|&id| (dist(id), id));
        rows[from.id] = others;
    }
    Some(rows)
}

/// The machine's nodes (scx_utils' topology).
pub fn numa_nodes(topo: &scx_utils::Topology) -> Vec<NumaNode> {
    topo.nodes
        .values()
        .map(|n| NumaNode { id: n.id, distance: n.distance.clone(), has_cpus: !n.all_cpus.is_empty() })
        .collect()
}

#[cfg(test)]
mod tests;
