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

// The concepts, each a folder, dependencies pointing one way (down this
// list): the agent uses everything below it; the control socket the
// reports and the tags; the module interface the reports; the reports the
// nodes; the nodes and the tags only the BPF interface. The tools crate
// (tools/: top, trace, monitor) and the CLI (scx_chameleon/) sit on top.
pub mod agent;
pub mod control;
pub mod module;
pub mod report;
pub mod tags;
pub mod nodes;
pub mod bpf_intf;
pub mod doorbell;
pub mod pidfd;
pub mod cpulist;
#[allow(clippy::all)]
pub mod bpf_skel;

pub use agent::opts::Opts;
pub use agent::scheduler::Scheduler;
pub use agent::signals::{Doorbell, Shutdown};
