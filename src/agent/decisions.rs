//! The agent's decision log: one debug line per decision, under its own
//! tracing target, stamped on the clock BPF stamps its events with.

/// The tracing target of the agent's decisions, one debug line each:
/// `assign pid=… cpus=… gen=… tax=… ts_ns=…`, `unassign pid=… ts_ns=…`,
/// `rebalanced changes=… after_us=…`, `untagged load=…`, `autotax pid=…`.
/// Off unless asked (`--log-level info,decisions=debug`): the VM tests and
/// benches read them from the log; an agent in service does not pay for
/// formatting a line per rotation.
pub const DECISIONS: &str = "decisions";

/// Nanoseconds on the clock bpf_ktime_get_ns() uses, to time decisions
/// against the events that caused them.
pub fn monotonic_ns() -> u64 {
    crate::report::metrics::clock_ns(nix::time::ClockId::CLOCK_MONOTONIC)
}
