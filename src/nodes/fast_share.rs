//! AASH's fast queue (Saez et al., §2.1, §2.3, §3.2, §3.4): who holds the
//! scarce fast contexts — here the pairs the node manager can grant — while
//! requesters outnumber them. Pure and deterministic: time is a count of
//! accounting periods (`rotate()`, once per `--share-period-ms`), so that
//! shares replay exactly in host tests.
//!
//! - **Shares**: at each period every awake requester earns, in credit, its
//!   share of its class's contexts, n·w/Σw, water-filled (nobody's share
//!   exceeds one context: what a heavy requester cannot use goes to the
//!   others). The n with the most credit hold a context for the next period
//!   and pay one. Equal weights take turns; otherwise the turns are
//!   proportional to the weights (a deficit round robin across periods, the
//!   role of AASH's fast credits). Ties: the current holder (one migration
//!   less), then the heavier, then who asked first.
//! - **Bounded credit**: credit is kept centred on zero and clamped to
//!   ±[`CREDIT_BOUND`]; a newcomer starts at the mean; a sleeper earns
//!   nothing, and one asleep long enough to give its object up (the agent's
//!   sleeper release) leaves the queue and comes back as a newcomer. Nobody
//!   banks credit to take a context for many periods in a row later.
//! - **Classes** (§2.3, §3.4): high first — tagged `prio=high`, or *boosted*:
//!   a group (cgroup) with at most `boost_threshold` awake requesters, a
//!   sequential phase (0 disables) — then normal. Each class shares what it
//!   gets as above; a class that gets no context earns nothing.
//! - **Holding** (§3): a holder keeps its context for the whole period, so a
//!   requester changes object at most once per period. A context freed
//!   mid-period (its holder exits, withdraws, or sleeps long enough to be
//!   released) goes to the best waiter at once — preferring one that did not
//!   lose its context at this period's start — so no context idles while a
//!   requester runs without one. Awake requesters rank before sleeping ones.
//!   Before the first period nothing is held: the order is the static one
//!   (class, weight, arrival), as the node manager had before periods.
//! - **The queue**: everyone is kept sorted in the order a free context goes
//!   to them (`queue()`), updated with each change of an entry, so that a
//!   pick between period starts reads the first few instead of ranking
//!   every requester (the node manager picks at every rebalance).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

/// One context held for one period, in credit units.
pub const SCALE: i64 = 1 << 20;
/// Credit is clamped to ±this: two periods' worth.
pub const CREDIT_BOUND: i64 = 2 * SCALE;
/// Default low-parallelism threshold: a group with one awake requester
/// (AASH's experiments: "one").
pub const BOOST_DEFAULT: usize = 1;

/// What places a requester in a class: an explicit high priority (tag
/// `prio=high`) and the group whose awake requesters are counted for the
/// boost (the task's cgroup).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Member {
    pub high: bool,
    pub group: u64,
}

#[derive(Debug, Clone)]
struct Entry {
    /// Where it stands in `FastShare::queue` (as last inserted there).
    key: Wait,
    weight: u64,
    /// Arrival order (the node manager's), the last tie-break.
    seq: u64,
    member: Member,
    awake: bool,
    /// Low parallelism in its group, as found at the last period's start.
    boosted: bool,
    credit: i64,
    /// The period at whose start it lost its context: a mid-period fill
    /// prefers others, so that it does not move twice in one period.
    lost_at: Option<u64>,
}

impl Entry {
    fn high(&self) -> bool {
        self.member.high || self.boosted
    }
}

#[derive(Debug, Clone)]
pub struct FastShare {
    entries: BTreeMap<i32, Entry>,
    /// Every entry by its `key`: the order of `pick`'s waiters.
    queue: BTreeSet<Wait>,
    /// Σ credit, for a newcomer's mean without a pass over everyone.
    credit_sum: i64,
    /// Accounting periods started so far (0: none yet, nothing is held).
    period: u64,
    boost_threshold: usize,
}

impl Default for FastShare {
    fn default() -> Self {
        Self::new(BOOST_DEFAULT)
    }
}

impl FastShare {
    pub fn new(boost_threshold: usize) -> Self {
        FastShare { entries: BTreeMap::new(), queue: BTreeSet::new(), credit_sum: 0, period: 0, boost_threshold }
    }

    pub fn set_boost_threshold(&mut self, t: usize) {
        self.boost_threshold = t;
    }

    pub fn period(&self) -> u64 {
        self.period
    }

    /// A requester joins (or its weight or class changes: its credit stays).
    pub fn join(&mut self, pid: i32, weight: u32, seq: u64, member: Member) {
        if let Some(e) = self.entries.get_mut(&pid) {
            e.weight = u64::from(weight.max(1));
            e.member = member;
            self.requeue(pid);
            return;
        }
        let credit = self.mean_credit();
        self.credit_sum += credit;
        let mut e = Entry {
            key: Wait::default(),
            weight: u64::from(weight.max(1)),
            seq,
            member,
            awake: true,
            boosted: false,
            credit,
            lost_at: None,
        };
        e.key = wait_key(self.period, pid, &e);
        self.queue.insert(e.key);
        self.entries.insert(pid, e);
    }

    pub fn leave(&mut self, pid: i32) {
        if let Some(e) = self.entries.remove(&pid) {
            self.queue.remove(&e.key);
            self.credit_sum -= e.credit;
        }
    }

    /// Put `pid` where its entry now ranks in the queue.
    fn requeue(&mut self, pid: i32) {
        if let Some(e) = self.entries.get_mut(&pid) {
            self.queue.remove(&e.key);
            e.key = wait_key(self.period, pid, e);
            self.queue.insert(e.key);
        }
    }

    /// The queue from the entries again, and the credit sum (after a period
    /// start changed every entry).
    fn rebuild_queue(&mut self) {
        let period = self.period;
        let mut keys = Vec::with_capacity(self.entries.len());
        for (&pid, e) in self.entries.iter_mut() {
            e.key = wait_key(period, pid, e);
            keys.push(e.key);
        }
        // Sorted first: the set is then built in one pass.
        keys.sort_unstable();
        self.queue = keys.into_iter().collect();
        self.credit_sum = self.entries.values().map(|e| e.credit).sum();
    }

    /// Everyone, in the order a context set free between period starts goes
    /// to them (`pick`'s order for waiters; before the first period, the
    /// static order).
    pub fn queue(&self) -> impl Iterator<Item = i32> + '_ {
        self.queue.iter().map(wait_pid)
    }

    /// Is the queue what the entries say (a check for tests and the node
    /// manager's audit)?
    pub fn check(&self) -> Result<(), String> {
        let mut again = self.clone();
        again.rebuild_queue();
        if again.queue != self.queue {
            return Err(format!("fast queue out of date: {:?} against {:?}", self.queue, again.queue));
        }
        if again.credit_sum != self.credit_sum {
            return Err(format!("credit sum {} against {}", self.credit_sum, again.credit_sum));
        }
        Ok(())
    }

    /// The requester runs (or sleeps). Nothing moves now: it counts at the
    /// next period, and in the order of mid-period fills.
    pub fn set_awake(&mut self, pid: i32, awake: bool) {
        if let Some(e) = self.entries.get_mut(&pid) {
            e.awake = awake;
            self.requeue(pid);
        }
    }

    pub fn credit(&self, pid: i32) -> Option<i64> {
        self.entries.get(&pid).map(|e| e.credit)
    }

    /// In the high class (explicitly or boosted at the last period's start)?
    pub fn is_high(&self, pid: i32) -> bool {
        self.entries.get(&pid).is_some_and(Entry::high)
    }

    fn mean_credit(&self) -> i64 {
        if self.entries.is_empty() {
            return 0;
        }
        self.credit_sum / self.entries.len() as i64
    }

    /// Sort key, best first: awake, class, credit, (held), weight, arrival.
    fn rank(pid: i32, e: &Entry, held: bool) -> Rank {
        (!e.awake, !e.high(), Reverse(e.credit), !held, Reverse(e.weight), e.seq, pid)
    }

    /// Between period starts: the `n` holders, given who holds a context now
    /// (`holding`). Holders keep theirs (the best `n` if fewer contexts are
    /// left); free contexts go to the best waiters.
    pub fn pick(&self, n: usize, holding: &BTreeSet<i32>) -> BTreeSet<i32> {
        if self.period == 0 {
            return self.queue().take(n).collect();
        }
        let kept = holding.iter().filter_map(|&p| self.entries.get(&p).map(|e| (Self::rank(p, e, true), p))).collect();
        let mut out = best(kept, n);
        if out.len() < n {
            let free = n - out.len();
            let waiters: Vec<i32> = self.queue().filter(|p| !out.contains(p)).take(free).collect();
            out.extend(waiters);
        }
        out
    }

    /// A period starts: account the shares, then choose the `n` holders for
    /// this period (`holding`: who holds a context as the last one ends).
    /// `runnable(group)`, if known, caps a group's awake count for the boost
    /// (the agent's view of who sleeps is partial; BPF counts runnable tasks).
    pub fn rotate(
        &mut self,
        n: usize,
        holding: &BTreeSet<i32>,
        runnable: impl Fn(u64) -> Option<usize>,
    ) -> BTreeSet<i32> {
        self.period += 1;
        self.classify(runnable);
        if self.entries.len() <= n {
            // Everyone holds: nobody is owed anything, the books start over.
            for e in self.entries.values_mut() {
                e.credit = 0;
                e.lost_at = None;
            }
            self.rebuild_queue();
            return self.entries.keys().copied().collect();
        }
        let awake = |high: bool| -> Vec<(i32, u64)> {
            self.entries.iter().filter(|(_, e)| e.awake && e.high() == high).map(|(&p, e)| (p, e.weight)).collect()
        };
        let (high, normal) = (awake(true), awake(false));
        let slots_high = n.min(high.len());
        let slots_normal = (n - slots_high).min(normal.len());
        let mut earned: Vec<(i32, i64)> = shares(slots_high, &high).into_iter().chain(shares(slots_normal, &normal)).collect();
        // In pid order, alongside the entries: no lookup per requester.
        earned.sort_unstable();
        let mut earned = earned.into_iter().peekable();
        for (pid, e) in self.entries.iter_mut() {
            if let Some((_, c)) = earned.next_if(|(p, _)| p == pid) {
                e.credit += c;
            }
        }
        let mut held = holding.iter().peekable();
        let all = (self.entries.iter())
            .map(|(&p, e)| {
                // `holding` in pid order alongside: no lookup per requester.
                while held.next_if(|&&h| h < p).is_some() {}
                (Self::rank(p, e, held.next_if_eq(&&p).is_some()), p)
            })
            .collect();
        let chosen = best(all, n);
        for &pid in &chosen {
            self.entries.get_mut(&pid).unwrap().credit -= SCALE;
        }
        for pid in holding.difference(&chosen) {
            if let Some(e) = self.entries.get_mut(pid) {
                e.lost_at = Some(self.period);
            }
        }
        // Centre and bound: only differences order requesters, and a
        // newcomer (at the mean) then stands where everyone does on average.
        self.credit_sum = self.entries.values().map(|e| e.credit).sum();
        let mean = self.mean_credit();
        for e in self.entries.values_mut() {
            e.credit = (e.credit - mean).clamp(-CREDIT_BOUND, CREDIT_BOUND);
        }
        self.rebuild_queue();
        chosen
    }

    /// Boost: groups with at most `boost_threshold` awake requesters.
    fn classify(&mut self, runnable: impl Fn(u64) -> Option<usize>) {
        let mut awake: BTreeMap<u64, usize> = BTreeMap::new();
        for e in self.entries.values() {
            *awake.entry(e.member.group).or_default() += usize::from(e.awake);
        }
        for (group, count) in awake.iter_mut() {
            if let Some(r) = runnable(*group) {
                *count = (*count).min(r);
            }
        }
        for e in self.entries.values_mut() {
            e.boosted = self.boost_threshold > 0 && awake[&e.member.group] <= self.boost_threshold;
        }
    }
}

type Rank = (bool, bool, Reverse<i64>, bool, Reverse<u64>, u64, i32);

/// A waiter's place in the queue for a context set free: those that did not
/// lose theirs at this period's start first, then by rank (a non-holder's:
/// awake, class, credit, weight, arrival, pid), packed into integers that
/// compare in that order (the queue is sorted again at every period start).
type Wait = (u128, u128);

fn wait_key(period: u64, pid: i32, e: &Entry) -> Wait {
    let flags = u128::from(e.lost_at == Some(period)) << 2 | u128::from(!e.awake) << 1 | u128::from(!e.high());
    // Descending credit and weight: their bits in an unsigned of the same
    // order, inverted. (A weight comes from a u32.)
    let credit = !((e.credit as u64) ^ (1 << 63));
    let weight = !u32::try_from(e.weight).unwrap_or(u32::MAX);
    let pid = (pid as u32) ^ (1 << 31);
    (flags << 64 | u128::from(credit), u128::from(weight) << 96 | u128::from(e.seq) << 32 | u128::from(pid))
}

/// The pid of a queue key.
fn wait_pid(key: &Wait) -> i32 {
    ((key.1 as u32) ^ (1 << 31)) as i32
}

/// The `n` best by key (lowest first): a selection, not a sort, as this runs
/// at every rebalance over every requester.
fn best<K: Ord>(mut keyed: Vec<(K, i32)>, n: usize) -> BTreeSet<i32> {
    if n == 0 {
        return BTreeSet::new();
    }
    if keyed.len() > n {
        keyed.select_nth_unstable_by(n - 1, |a, b| a.0.cmp(&b.0));
        keyed.truncate(n);
    }
    keyed.into_iter().map(|(_, p)| p).collect()
}

/// Each requester's share of `slots` contexts for one period, in credit:
/// proportional to weight, none above one context (what the heaviest
/// cannot use is shared among the rest, heaviest capped first).
fn shares(slots: usize, members: &[(i32, u64)]) -> Vec<(i32, i64)> {
    let mut by_weight: Vec<(i32, u64)> = members.to_vec();
    by_weight.sort_by_key(|&(pid, w)| (Reverse(w), pid));
    let mut total: u128 = by_weight.iter().map(|&(_, w)| u128::from(w)).sum();
    let mut left = slots as u128;
    let mut out = Vec::with_capacity(by_weight.len());
    let mut rest = by_weight.as_slice();
    while let Some((&(pid, w), tail)) = rest.split_first() {
        if left == 0 || left * u128::from(w) < total {
            break;
        }
        out.push((pid, SCALE));
        left -= 1;
        total -= u128::from(w);
        rest = tail;
    }
    for &(pid, w) in rest {
        let c = (left * SCALE as u128 * u128::from(w)).checked_div(total).unwrap_or(0);
        out.push((pid, c as i64));
    }
    out
}

#[cfg(test)]
mod tests;
