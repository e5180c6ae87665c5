//! Which of its CPUs the node manager may place objects on: those the
//! kernel has online and `scx_chameleon park` has not parked. Told by the
//! policy's cpu_online/cpu_offline events and by park operations, and
//! checked against the kernel's own list at every reconcile (an event lost
//! when the ring buffer was full would leave it wrong for good).
//!
//! Invariant (after each event and reconcile): the manager counts a CPU
//! online only if it is not parked. Each method returns the node manager's
//! changes, for the Assigner to publish.

use crate::nodes::node::{from_topology, online_cpus, TopologyOpts};
use crate::nodes::node_manager::{Change, NodeManager};
use std::collections::BTreeSet;
use tracing::warn;

pub struct CpuPresence {
    /// CPUs parked (`scx_chameleon park`): not there for the node manager.
    parked: BTreeSet<usize>,
    /// Read the topology again when an unknown CPU comes online, this way
    /// (None: the nodes were given by --node-cpus).
    reread_topology: Option<TopologyOpts>,
}

impl CpuPresence {
    pub fn new(reread_topology: Option<TopologyOpts>) -> Self {
        CpuPresence { parked: BTreeSet::new(), reread_topology }
    }

    pub fn parked(&self) -> &BTreeSet<usize> {
        &self.parked
    }

    /// The policy saw `cpu` go offline.
    pub fn offline(&self, manager: &mut NodeManager, cpu: usize) -> Vec<Change> {
        manager.set_online(cpu, false)
    }

    /// The policy saw `cpu` come online.
    pub fn online(&self, manager: &mut NodeManager, cpu: usize) -> Vec<Change> {
        let mut changes = manager.set_online(cpu, !self.parked.contains(&cpu));
        // Offline at start, so not in the topology we read: read it again.
        if let (false, Some(opts)) = (manager.has_cpu(cpu), &self.reread_topology) {
            match from_topology(opts) {
                Ok(nodes) => changes = manager.set_nodes(nodes),
                Err(e) => warn!("re-reading the topology after cpu{cpu} came online: {e:#}"),
            }
        }
        changes
    }

    /// CPUs parked or unparked: the node manager no longer places objects
    /// on a parked CPU (the policy has split those it was part of already).
    pub fn park(&mut self, manager: &mut NodeManager, cpus: &[usize], park: bool) -> Vec<Change> {
        let online = online_cpus().unwrap_or_default();
        let mut changes = Vec::new();
        for &cpu in cpus {
            if park {
                self.parked.insert(cpu);
            } else {
                self.parked.remove(&cpu);
            }
            if manager.has_cpu(cpu) {
                changes.extend(manager.set_online(cpu, !park && online.contains(&cpu)));
            }
        }
        changes
    }

    /// At a reconcile: the kernel's own list decides.
    pub fn recheck(&self, manager: &mut NodeManager) -> Vec<Change> {
        let Ok(online) = online_cpus() else { return Vec::new() };
        let cpus: Vec<usize> = manager.cpus().collect();
        let mut changes = Vec::new();
        for cpu in cpus {
            changes.extend(manager.set_online(cpu, online.contains(&cpu) && !self.parked.contains(&cpu)));
        }
        changes
    }
}

#[cfg(test)]
mod tests;
