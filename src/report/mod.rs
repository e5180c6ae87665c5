//! What the agent reports and how it is read: the policy's events
//! (`event`), its per-CPU counters (`stats`), the status file (`status`),
//! the scx_stats counters and OpenMetrics text (`metrics`) with the kernel's
//! own sched_ext counters (`kernel_events`). The agent writes these; the
//! control socket, the CLI and the tools crate read them.

pub mod event;
pub mod kernel_events;
pub mod lateness;
pub mod metrics;
pub mod stats;
pub mod status;
