//! The processes in one cgroup, as rules see them (`match.comm`,
//! `match.uid`, which every one of them must match): the name and effective
//! uid of each process listed in its `cgroup.procs`. Read only while some
//! rule asks for them (a /proc read per process, once a second). A process
//! that exits while it is read is left out: it is no longer in the cgroup.

use std::path::Path;

/// Comms and effective uids of the processes in `cgroup` (a directory of the
/// cgroup mount); empty if it has none or cannot be read.
pub fn read(cgroup: &Path) -> (Vec<String>, Vec<u32>) {
    let (mut comms, mut uids) = (Vec::new(), Vec::new());
    let Ok(list) = std::fs::read_to_string(cgroup.join("cgroup.procs")) else { return (comms, uids) };
    for pid in list.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
        let proc = Path::new("/proc").join(pid.to_string());
        let (Ok(comm), Ok(status)) =
            (std::fs::read_to_string(proc.join("comm")), std::fs::read_to_string(proc.join("status")))
        else {
            continue;
        };
        // Both or neither: rules read "every process" off the two lists.
        let Some(uid) = effective_uid(&status) else { continue };
        comms.push(comm.trim_end_matches('\n').to_string());
        uids.push(uid);
    }
    comms.sort();
    comms.dedup();
    uids.sort_unstable();
    uids.dedup();
    (comms, uids)
}

/// The effective uid from /proc/PID/status ("Uid:\treal\teffective\tsaved\tfs"):
/// what the process runs as (a setuid program counts as its owner).
pub fn effective_uid(status: &str) -> Option<u32> {
    status.lines().find_map(|l| l.strip_prefix("Uid:"))?.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests;
