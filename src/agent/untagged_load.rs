//! The untagged load: how many runnable tasks other than the tagged ones
//! (and this agent) the node manager keeps CPUs native for. Sampled at every
//! agent loop from the policy's per-CPU counts (`untagged_runnable`); at
//! each reconcile, the load that held over the window (`steady_running`) is
//! weighed against the one in force (`untagged_step`).
//!
//! Invariant: `pending` is Some only while the load last seen is higher than
//! the one in force and has not yet held for UNTAGGED_STEADY reconciles.

/// Reconciles in a row a new untagged load must be seen before it counts.
const UNTAGGED_STEADY: u32 = 3;

#[derive(Default)]
pub struct UntaggedLoad {
    /// Runnable-untagged samples since the last reconcile (one per agent loop).
    samples: Vec<usize>,
    /// A higher untagged-load estimate and how many reconciles in a row saw
    /// it (see untagged_step).
    pending: Option<(usize, u32)>,
}

impl UntaggedLoad {
    /// One agent loop's count of runnable untagged tasks.
    pub fn sample(&mut self, n: usize) {
        self.samples.push(n);
    }

    /// At a reconcile, with `current` the load in force: the load to apply
    /// now, if any. Starts the next window.
    pub fn due(&mut self, current: usize) -> Option<usize> {
        let seen = steady_running(&mut self.samples)?;
        let (apply, next) = untagged_step(current, seen, self.pending);
        self.pending = next;
        apply
    }
}

/// One reconcile of the untagged-load estimate: `current` is in force, `seen`
/// the load measured over the last second, `pending` a higher load seen
/// before (the lowest of a streak) and for how many reconciles in a row.
/// Returns the load to apply now, if any, and the new `pending`.
///
/// Asymmetric on purpose: taking CPUs from objects (a higher load) splits
/// them, so the load must hold for UNTAGGED_STEADY reconciles and a shell or
/// a short job does not make objects flap; a lower load leaves CPUs idle, so
/// it applies at once (a task that was untagged and is now tagged gets its
/// whole object back within a reconcile). Shrinks are thus at most one per
/// UNTAGGED_STEADY seconds.
pub fn untagged_step(current: usize, seen: usize, pending: Option<(usize, u32)>) -> (Option<usize>, Option<(usize, u32)>) {
    if seen == current {
        return (None, None);
    }
    if seen < current {
        return (Some(seen), None);
    }
    // Higher than in force: the streak goes on even if the load moves, and
    // what applies is the lowest seen in it (a load that flickered between 4
    // and 5 restarted an exact-match streak for 10 s in contention).
    let (low, k) = match pending {
        Some((n, k)) => (n.min(seen), k + 1),
        None => (seen, 1),
    };
    if k >= UNTAGGED_STEADY {
        (Some(low), None)
    } else {
        (None, Some((low, k)))
    }
}

/// The untagged load that held over a reconcile window: the 10th percentile
/// of its samples, which are cleared. The count comes from the policy
/// (cpu_stats[].nr_untagged), exact at each instant, so what this filters is
/// what did not last: a shell's commands, kworkers, a CLI polling the agent
/// (present in most samples under TCG, but not in nine in ten), and the rare
/// sample taken while a task was between stopping() and runnable() for a
/// property change (under TCG a vCPU can stop for milliseconds inside that
/// window; the minimum, which one such sample defeats, missed 4 steady
/// spinners for 20 s in a make test). It used to be /proc/stat's
/// procs_running, which also misses migrating tasks.
pub fn steady_running(samples: &mut Vec<usize>) -> Option<usize> {
    if samples.is_empty() {
        return None;
    }
    samples.sort_unstable();
    let p10 = samples[samples.len() / 10];
    samples.clear();
    Some(p10)
}

/// Runnable untagged tasks from the policy's per-CPU counts, whose sum alone
/// is meaningful (a task may wake on one CPU and sleep on another).
pub fn untagged_runnable(per_cpu: impl IntoIterator<Item = u64>) -> usize {
    let sum = per_cpu.into_iter().fold(0u64, |a, n| a.wrapping_add(n)) as i64;
    sum.max(0) as usize
}

#[cfg(test)]
mod tests;
