//! The agent's file descriptors. It holds one per requester (its pidfd,
//! object_map.rs) and one per `tax=auto` task that counts instructions (a
//! perf fd, auto_taxes.rs), and whoever can make threads in a tagged cgroup
//! decides how many requesters there are. So the soft RLIMIT_NOFILE is
//! raised to the hard one at start, and the per-task descriptors are capped
//! below it, leaving RESERVED for the agent's own (the policy's maps and
//! programs, the ring buffer, sockets and their clients, /proc and sysfs
//! reads): a flood of threads is refused objects (counted), never makes
//! the agent's own opens fail.

use nix::sys::resource::{getrlimit, setrlimit, Resource};
use tracing::{info, warn};

/// Descriptors kept for the agent's own use under any limit.
pub const RESERVED: u64 = 256;
/// At most this many pidfds, however high the limit: far more requesters
/// than any machine has pairs for (they take turns, fast_share.rs).
pub const MAX_PIDFDS: usize = 4096;
/// At most this many instruction counters.
pub const MAX_PERF: usize = 1024;

/// How many descriptors of each kind the agent may hold for tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FdBudget {
    pub pidfds: usize,
    pub perf: usize,
}

impl FdBudget {
    /// The budget under a soft limit of `soft` descriptors: what is left
    /// past RESERVED, two thirds for pidfds and a third for counters (each
    /// counting task holds a pidfd too), each within its fixed cap.
    pub fn for_limit(soft: u64) -> FdBudget {
        let spare = usize::try_from(soft.saturating_sub(RESERVED)).unwrap_or(usize::MAX);
        FdBudget { pidfds: (spare / 3).saturating_mul(2).min(MAX_PIDFDS), perf: (spare / 3).min(MAX_PERF) }
    }
}

impl Default for FdBudget {
    fn default() -> Self {
        FdBudget { pidfds: MAX_PIDFDS, perf: MAX_PERF }
    }
}

/// Raise the soft RLIMIT_NOFILE to the hard limit (an unprivileged raise:
/// always allowed). Returns the soft limit in force after (RLIM_INFINITY as
/// u64::MAX); if it cannot be read, the common default of 1024.
pub fn raise_nofile_limit() -> u64 {
    let (soft, hard) = match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok(l) => l,
        Err(e) => {
            warn!("reading RLIMIT_NOFILE: {e}; assuming 1024");
            return 1024;
        }
    };
    if soft >= hard {
        return soft;
    }
    match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
        Ok(()) => {
            info!("file descriptors: soft limit raised from {soft} to {hard}");
            hard
        }
        Err(e) => {
            warn!("raising RLIMIT_NOFILE from {soft} to {hard}: {e}");
            soft
        }
    }
}

#[cfg(test)]
mod tests;
