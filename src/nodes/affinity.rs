//! A task's allowed CPUs (sched_getaffinity, which its cgroup's cpuset
//! bounds), for the node manager: an object holds only CPUs its task may
//! run on (node_manager/place.rs `block_allowed`). Read when
//! the task asks for an object and again at every reconcile (an affinity
//! change sends no event of ours). (Where a waiting task is, the rotation
//! takes from its events: assign.rs, seen_on.)

use std::collections::BTreeSet;

/// The CPUs `pid` may run on; None if it is gone or cannot be read.
pub fn of(pid: i32) -> Option<BTreeSet<usize>> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(pid)).ok()?;
    Some((0..nix::sched::CpuSet::count()).filter(|&cpu| set.is_set(cpu).unwrap_or(false)).collect())
}

#[cfg(test)]
mod tests;
