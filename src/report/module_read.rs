//! What one read of the companion module's STATS reports, as the agent
//! carries it: its state for the status (status.rs) and its numbers for
//! the metrics (metrics.rs). The module interface (module/proxy.rs) fills
//! it; the reports only read it.

use crate::report::status::ModuleStatus;

/// One STATS read, split by where each part goes: the module's state into
/// the view (status.rs), its numbers into the metrics (metrics.rs). Both
/// come from the same read, so they describe the same instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModuleRead {
    pub state: ModuleStatus,
    pub counters: ModuleCounters,
}

/// The module's numbers, as the metrics carry them.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ModuleCounters {
    pub lends: u64,
    pub reclaims: u64,
    /// IRQs away from their affinity now (a level, not a count).
    pub irqs_moved: u32,
    pub managed_skipped: u64,
    /// Interruptions lent CPUs took while lent, all lends so far: device
    /// IRQs, softirqs, IPIs, local timer.
    pub lent_irqs: u64,
    pub lent_softirqs: u64,
    pub lent_ipis: u64,
    pub lent_timers: u64,
    /// The last PARK's and UNPARK's latencies.
    pub park_critical_ns: u64,
    pub park_physical_ns: u64,
    pub unpark_critical_ns: u64,
    pub unpark_physical_ns: u64,
}
