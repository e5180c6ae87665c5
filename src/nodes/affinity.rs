//! A task's allowed CPUs (sched_getaffinity), for the node manager: an object
//! helps a pinned task only where it may run on the representative. Read when
//! the task asks for an object and again at every reconcile (an affinity
//! change sends no event of ours). And the CPU it is on, read at each
//! rotation of the fast contexts for those waiting for one.

use std::collections::BTreeSet;

/// The CPUs `pid` may run on; None if it is gone or cannot be read.
pub fn of(pid: i32) -> Option<BTreeSet<usize>> {
    let set = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(pid)).ok()?;
    Some((0..nix::sched::CpuSet::count()).filter(|&cpu| set.is_set(cpu).unwrap_or(false)).collect())
}

/// The CPU `pid` last ran on or is queued on (`/proc/PID/stat`'s
/// "processor"); None if it is gone or the line cannot be parsed.
pub fn cpu_of(pid: i32) -> Option<usize> {
    parse_processor(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Field 39 of a stat line, counted after the command (which may hold
/// spaces and parentheses: it ends at the last ')').
fn parse_processor(stat: &str) -> Option<usize> {
    // Fields 3.. follow the command: the processor is the 37th of them.
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(36)?.parse().ok()
}

#[cfg(test)]
mod tests;
