//! Per-CPU counters read from the policy's .bss, summed and differenced.

// The skeleton's copy of `struct chameleon_cpu_stats` (the one in .bss).
use crate::bpf_skel::types::chameleon_cpu_stats;
use std::fmt;

/// Sum of the per-CPU counters at one instant.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Totals {
    pub enqueued: u64,
    pub direct: u64,
    pub dispatched: u64,
    pub stolen: u64,
    pub kicks: u64,
    pub busy_ns: u64,
    pub fuse: u64,
    pub partial: u64,
    pub fuse_denied: u64,
    pub split: u64,
    pub proxy_served: u64,
    /// Fused owners a higher-class kthread bound to their CPU preempted (the
    /// emulation's idle injection, the stopper), object kept.
    #[serde(default)]
    pub kthread_keeps: u64,
    /// Waking tasks that took their CPU from a running task owed less.
    #[serde(default)]
    pub wake_preempts: u64,
    /// Hybrid: tasks sent from a slow CPU to an idle fast one.
    #[serde(default)]
    pub fast_moves: u64,
    /// Tasks put on an LLC's shared queue (bpf/llc_queue.bpf.c).
    #[serde(default)]
    pub llc_queued: u64,
    /// Tasks taken from an LLC queue, and of them from another LLC's.
    #[serde(default)]
    pub llc_taken: u64,
    #[serde(default)]
    pub llc_far: u64,
}

impl Totals {
    pub fn sum(per_cpu: &[chameleon_cpu_stats]) -> Totals {
        per_cpu.iter().fold(Totals::default(), |t, s| Totals {
            enqueued: t.enqueued.wrapping_add(s.nr_enqueued),
            direct: t.direct.wrapping_add(s.nr_direct),
            dispatched: t.dispatched.wrapping_add(s.nr_dispatched),
            stolen: t.stolen.wrapping_add(s.nr_stolen),
            kicks: t.kicks.wrapping_add(s.nr_kicks),
            busy_ns: t.busy_ns.wrapping_add(s.busy_ns),
            fuse: t.fuse.wrapping_add(s.nr_fuse),
            partial: t.partial.wrapping_add(s.nr_partial),
            fuse_denied: t.fuse_denied.wrapping_add(s.nr_fuse_denied),
            split: t.split.wrapping_add(s.nr_split),
            proxy_served: t.proxy_served.wrapping_add(s.nr_proxy_served),
            kthread_keeps: t.kthread_keeps.wrapping_add(s.nr_kthread_keeps),
            wake_preempts: t.wake_preempts.wrapping_add(s.nr_wake_preempts),
            fast_moves: t.fast_moves.wrapping_add(s.nr_fast_moves),
            llc_queued: t.llc_queued.wrapping_add(s.nr_llc_queued),
            llc_taken: t.llc_taken.wrapping_add(s.nr_llc_taken),
            llc_far: t.llc_far.wrapping_add(s.nr_llc_far),
        })
    }

    /// Counts since `earlier`. The counters only grow, so wrapping subtraction
    /// is right even across a u64 wrap.
    pub fn since(&self, earlier: &Totals) -> Totals {
        Totals {
            enqueued: self.enqueued.wrapping_sub(earlier.enqueued),
            direct: self.direct.wrapping_sub(earlier.direct),
            dispatched: self.dispatched.wrapping_sub(earlier.dispatched),
            stolen: self.stolen.wrapping_sub(earlier.stolen),
            kicks: self.kicks.wrapping_sub(earlier.kicks),
            busy_ns: self.busy_ns.wrapping_sub(earlier.busy_ns),
            fuse: self.fuse.wrapping_sub(earlier.fuse),
            partial: self.partial.wrapping_sub(earlier.partial),
            fuse_denied: self.fuse_denied.wrapping_sub(earlier.fuse_denied),
            split: self.split.wrapping_sub(earlier.split),
            proxy_served: self.proxy_served.wrapping_sub(earlier.proxy_served),
            kthread_keeps: self.kthread_keeps.wrapping_sub(earlier.kthread_keeps),
            wake_preempts: self.wake_preempts.wrapping_sub(earlier.wake_preempts),
            fast_moves: self.fast_moves.wrapping_sub(earlier.fast_moves),
            llc_queued: self.llc_queued.wrapping_sub(earlier.llc_queued),
            llc_taken: self.llc_taken.wrapping_sub(earlier.llc_taken),
            llc_far: self.llc_far.wrapping_sub(earlier.llc_far),
        }
    }
}

impl fmt::Display for Totals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "enq={} direct={} dispatch={} steal={} kick={} busy={}ms fuse={} partial={} denied={} split={} proxy={} kthread_kept={} wake_preempt={} fast_move={} llc_queued={} llc_taken={} llc_far={}",
            self.enqueued,
            self.direct,
            self.dispatched,
            self.stolen,
            self.kicks,
            self.busy_ns / 1_000_000,
            self.fuse,
            self.partial,
            self.fuse_denied,
            self.split,
            self.proxy_served,
            self.kthread_keeps,
            self.wake_preempts,
            self.fast_moves,
            self.llc_queued,
            self.llc_taken,
            self.llc_far
        )
    }
}

#[cfg(test)]
mod tests;
