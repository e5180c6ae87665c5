//! What the agent reports and how it is read: the policy's events
//! (`event`), its per-CPU counters (`stats`), the status file (`status`),
//! the scx_stats counters and OpenMetrics text (`metrics`) with the kernel's
//! own sched_ext counters (`kernel_events`), and what one read of the
//! companion module reports (`module_read`, which the module interface
//! fills in). The agent writes these; the control socket, the CLI and the
//! tools crate read them.

pub mod event;
pub mod kernel_events;
pub mod lateness;
pub mod metrics;
pub mod module_read;
pub mod stats;
pub mod status;
