//! The scx_chameleon agent: loads the BPF policy, attaches it, and turns what
//! it reports (ring-buffer events, per-CPU counters) into something people read.
//! The binary in `scx_chameleon/` is a thin CLI over this library.

/// A line on stdout that cannot kill the agent: with stdout closed (a pipe
/// whose reader went away, a closed terminal) println! panics on EPIPE; the
/// agent's scheduling must not depend on anyone reading its output.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

pub mod affinity;
pub mod assign;
pub mod auto_tax;
pub mod bpf_intf;
#[allow(clippy::all)]
pub mod bpf_skel;
pub mod cgroup_procs;
pub mod control;
pub mod event;
pub mod fast_share;
pub mod kernel_events;
pub mod metrics;
pub mod monitor;
pub mod node;
pub mod node_manager;
pub mod park;
pub mod progress;
pub mod proxy;
pub mod rules;
pub mod scheduler;
pub mod signals;
pub mod steal;
pub mod stats;
pub mod status;
pub mod tag;
pub mod tag_apply;
pub mod tag_source;
pub mod tag_store;
pub mod top;
pub mod top_cgroups;
pub mod top_events;
pub mod top_history;
pub mod top_keys;
pub mod top_layout;
pub mod top_names;
pub mod trace;
pub mod trace_record;

#[cfg(test)]
mod node_manager_tests;
#[cfg(test)]
mod policy_tests;
#[cfg(test)]
mod role_tests;
#[cfg(test)]
mod rules_tests;

pub use scheduler::{Opts, Scheduler};
pub use signals::{Doorbell, Shutdown};
