//! Where a task's object may be, for the node manager (node_manager/place.rs
//! `rep_in`): its representative a CPU the task may run on (its affinity,
//! sched_getaffinity), every CPU of it one the task's cgroup may use (its
//! cpuset, cpuset.cpus.effective), so that an object never borrows a CPU
//! outside a container's cpuset. Read when
//! the task asks for an object and again at every reconcile (an affinity
//! change sends no event of ours). (Where a waiting task is, the rotation
//! takes from its events: assign.rs, seen_on.)

use std::collections::BTreeSet;

/// The CPUs `pid` may run on; None if it is gone or cannot be read.
pub fn of(pid: i32) -> Option<BTreeSet<usize>> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(pid)).ok()?;
    Some((0..nix::sched::CpuSet::count()).filter(|&cpu| set.is_set(cpu).unwrap_or(false)).collect())
}

/// The CPUs `pid`'s cgroup may use: cpuset.cpus.effective of its cgroup, or
/// of the nearest ancestor where the cpuset controller is enabled (the file
/// exists only there). None: no constraint known (the task gone, no cgroup
/// v2, a list that cannot be read).
pub fn cpuset_of(pid: i32) -> Option<BTreeSet<usize>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    let path = text.lines().find_map(|l| l.strip_prefix("0::"))?;
    cpuset_from(std::path::Path::new(crate::tags::tag::CGROUP_ROOT), path.trim(), nix::sched::CpuSet::count())
}

/// cpuset.cpus.effective of `path` (a cgroup v2 path as /proc/PID/cgroup
/// gives it) under `root`, else of its nearest ancestor that has the file.
pub fn cpuset_from(root: &std::path::Path, path: &str, nr_cpus: usize) -> Option<BTreeSet<usize>> {
    let mut dir = root.join(path.trim_start_matches('/'));
    loop {
        if let Ok(list) = std::fs::read_to_string(dir.join("cpuset.cpus.effective")) {
            return crate::cpulist::CpuList::parse(&list, nr_cpus).ok().map(|l| l.cpus().iter().copied().collect());
        }
        if dir.as_path() == root || !dir.pop() || !dir.starts_with(root) {
            return None;
        }
    }
}

#[cfg(test)]
mod tests;
