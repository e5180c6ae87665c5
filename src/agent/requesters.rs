//! The tagged tasks alive that asked for an object (DEMAND): their tag, their
//! object level, their cgroup, and the CPU their last event came from.
//!
//! Invariant: once an event has been handled, a pid has a CPU here only if
//! it is a requester (`seen` may come first, on its DEMAND; `forget` clears
//! both).

use crate::nodes::fast_share::Member;
use crate::tags::tag::{Prio, Props};
use std::collections::{BTreeMap, HashMap};

/// What a requester asked with.
#[derive(Clone, Copy)]
pub struct Requester {
    /// Its cgroup's tag.
    pub props: Props,
    /// The object level BPF derived from the tag and SMT class.
    pub level: u32,
    pub cgroup: u64,
}

impl Requester {
    /// Its class in the fast queue: its tag's prio, its cgroup.
    pub fn member(&self) -> Member {
        Member { high: self.props.prio == Prio::High, group: self.cgroup }
    }
}

#[derive(Default)]
pub struct Requesters {
    by_pid: HashMap<i32, Requester>,
    /// The CPU each requester's last event came from: where it waits, for
    /// the rotation to make a representative nearby (no /proc read per
    /// waiter per rotation on the loop).
    seen_on: HashMap<i32, usize>,
}

impl Requesters {
    pub fn get(&self, pid: i32) -> Option<&Requester> {
        self.by_pid.get(&pid)
    }

    pub fn contains(&self, pid: i32) -> bool {
        self.by_pid.contains_key(&pid)
    }

    pub fn is_empty(&self) -> bool {
        self.by_pid.is_empty()
    }

    /// `pid` asks (again): what it asked with before, if it did.
    pub fn insert(&mut self, pid: i32, r: Requester) -> Option<Requester> {
        self.by_pid.insert(pid, r)
    }

    /// An event of `pid` came from `cpu`.
    pub fn seen(&mut self, pid: i32, cpu: usize) {
        self.seen_on.insert(pid, cpu);
    }

    /// `pid` is no requester any more: whether it was one.
    pub fn forget(&mut self, pid: i32) -> bool {
        self.seen_on.remove(&pid);
        self.by_pid.remove(&pid).is_some()
    }

    /// Each requester's pid and cgroup.
    pub fn owners(&self) -> impl Iterator<Item = (i32, u64)> + '_ {
        self.by_pid.iter().map(|(&pid, r)| (pid, r.cgroup))
    }

    /// Where those `waits` says wait were last seen, by pid (those never
    /// seen left out).
    pub fn waiting_at(&self, waits: impl Fn(i32) -> bool) -> BTreeMap<i32, usize> {
        self.by_pid.keys().filter(|&&pid| waits(pid)).filter_map(|&pid| Some((pid, *self.seen_on.get(&pid)?))).collect()
    }
}

#[cfg(test)]
mod tests;
