//! The node manager (Chameleon §3.2, §4.2, §4.3.5): decides which CPUs form
//! which task's execution object. Pure and deterministic — no BPF, no clock —
//! so that the paper's scenarios replay exactly in host tests; `assign.rs`
//! feeds it events and publishes what it decides.
//!
//! Sizes first, places second:
//! - **Supply** is the online CPUs minus those kept native for runnable
//!   untagged tasks (a parallel program keeps its CPUs, Chameleon Fig. 4/6)
//!   while that leaves every requester a pair (over-provisioned). When it
//!   does not (under-provisioned, Fig. 7: no idle CPUs), the supply is every
//!   online CPU and objects are sized as if the machine were free: an object
//!   over busy CPUs is only the right to borrow, and at run time the virtual
//!   threads and the tax decide whether it may preempt the neighbours (tax
//!   100: never; 0.01: almost always). The paper's +97 % at tax 0.01 is a
//!   fused-4 speed: pairs there would cap it at level 1. A manager that
//!   granted only spare CPUs would switch the tax off exactly where it
//!   matters. The two regimes meet where the spare CPUs stop holding a pair
//!   per requester: one more busy CPU there can mean larger objects, each
//!   of them then a claim that the tax prices.
//! - **Targets**: if every requester's 2^level fits, each gets it. Otherwise
//!   each gets 2 CPUs (the largest objects are split in half until everyone
//!   has a level-1 object), and what remains goes to the highest weights
//!   first (ties: who asked first), doubling their objects towards what they
//!   asked for. When requesters outnumber the pairs, the pairs are AASH's
//!   fast contexts (`fast_share`): who holds them is decided once per
//!   accounting period (`rotate()`), in shares by weight, high priority and
//!   low parallelism first; between periods holders keep theirs and a pair
//!   set free goes to the next in that queue at once. Before the first
//!   period it is the static order (weight, then arrival).
//! - **Placement** is buddy-style in each node's slot order (SMT siblings
//!   adjacent), so every object is an aligned block and each power-of-two
//!   prefix of it is an object too (BPF's partial fuse). Objects keep their
//!   CPUs when their size is unchanged and shrink to the half that holds
//!   their representative. When enough CPUs are free but not as an aligned
//!   block, smaller objects are moved out of the way (defragmentation),
//!   choosing the block that displaces the fewest CPUs.
//! - **Representative**: the block's first CPU; at a rotation, where the
//!   task runs now if that CPU is in the block and the task may run there
//!   (`rotate_at`). The CPUs are listed by distance from it (slot offset
//!   rep ^ i), so every prefix is still an aligned block. So a rotation of
//!   the fast contexts moves fewer tasks: where the one that gains a pair
//!   waits on its lent CPU, it becomes the representative there and the
//!   holder it replaces stays where it is, now on a lent CPU: nobody
//!   migrates, the pair changes direction. (With equal turns the next pair
//!   set free is usually not the one the waiter waits on, so this is one
//!   rotation in three, not all: host test 27 migrations in 40 rotations
//!   against 80; bench_aash.sh, the kernel's nr_migrations at 30 ms
//!   periods 382-483 against 482-602 in the same 6 rounds.)
//!
//! Incremental: a rebalance decides exactly what recomputing everything
//! would (`rebalance()`, which remains as the reference: the agent audits
//! with it, and builds with debug assertions check every event against
//! it), but looks only at what can differ, so that its cost follows what
//! the event touched rather than the size of the machine:
//! - **Who is placed**: a requester whose target is unchanged, whose object
//!   has that size and whose CPUs are still online and allowed is kept where
//!   it is by the full recompute's first pass, so only the others are
//!   placed: those the event touched (came, went, changed request or
//!   affinity, held a CPU gone offline), those whose target changed, and
//!   those whose object is smaller than their target (`short`: the full
//!   recompute tries them again every time, and so does this). They are
//!   placed by the full recompute's own code (`place.rs`) around the slots
//!   the kept objects hold (`grid.rs`, kept across rebalances); objects it
//!   displaces (defragmentation) or moves to faster cores join them, as
//!   there.
//! - **Whose target changes** (`targets.rs`): contended, the pairs left free
//!   go to the first waiters of the fast queue, which `fast_share` keeps in
//!   order; when every size fits, only a changed request's. The holders a
//!   period's start chose, and before the first period the queue's first
//!   ones, are compared with the last holders one by one (a cost in pairs,
//!   not in requesters). Everyone's target is computed again when the supply
//!   is split greedily (what is asked does not fit), when the regime
//!   changes or more hold pairs than there are; a new node layout is placed
//!   from scratch.

mod check;
mod grid;
mod place;
mod targets;

#[cfg(test)]
mod tests;

pub use check::Audit;

use crate::nodes::fast_share::{FastShare, Member};
use crate::nodes::node::Node;
use grid::Grid;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

/// What one task asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub level: u32,
    pub weight: u32,
}

#[derive(Debug, Clone)]
struct Requester {
    req: Request,
    /// Arrival order: breaks weight ties, so decisions are stable.
    seq: u64,
    /// The size last decided for its object (0 or 1: none); the object
    /// is smaller when no block was found (then it is `short`).
    target: usize,
}

/// Where an object lives: `size` slots of node `node` from slot `start`,
/// its representative at slot `start + rep`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Place {
    node: usize,
    start: usize,
    size: usize,
    rep: usize,
}

/// A task's object as published to BPF.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    /// Representative first; each power-of-two prefix is an object.
    pub cpus: Vec<usize>,
    /// Changes whenever the CPUs change (BPF then re-places virtual threads).
    pub gen: u32,
}

/// One decision: `pid` now has `object` (None: it runs natively).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub pid: i32,
    pub object: Option<Object>,
}

/// How the targets were last computed, which says what an event can change
/// in them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Requesters outnumber the pairs: 2 for the pair holders, 0 for the rest.
    Fast,
    /// Everyone's size fits: each target is what it asked for.
    Want,
    /// The supply split greedily (or nothing computed yet).
    Other,
}

#[derive(Debug, Clone)]
pub struct NodeManager {
    nodes: Vec<Node>,
    online: BTreeSet<usize>,
    max_level: u32,
    /// Runnable untagged tasks: objects come first from the CPUs they leave
    /// idle (Fig. 6); when there are none, pairs over busy CPUs (Fig. 7).
    untagged_load: usize,
    requesters: BTreeMap<i32, Requester>,
    /// Where each object is (the same pids as `objects`).
    places: BTreeMap<i32, Place>,
    objects: BTreeMap<i32, Object>,
    next_seq: u64,
    next_gen: u32,
    /// Who holds the pairs while requesters outnumber them.
    share: FastShare,
    /// Objects moved by defragmentation so far (for stats and tests).
    pub nr_defrag_moves: u64,
    /// The CPUs a pinned requester may run on (only those with fewer than
    /// all): its object's representative must be one of them.
    allowed: BTreeMap<i32, BTreeSet<usize>>,
    /// The CPUs each requester's cgroup may use (its cpuset), where that is
    /// not all of ours: every CPU of its object is one of them.
    within: BTreeMap<i32, BTreeSet<usize>>,
    /// Where each requester runs (or waits), during a rotation's placement:
    /// the representative of a block placed for it there.
    running_on: BTreeMap<i32, usize>,
    /// Who holds which slot (the places' blocks), and which are online.
    grid: Grid,
    /// The largest object a node can hold (a power of two).
    largest: usize,
    /// Σ of what each requester asks for, capped at `largest`.
    sum_want: usize,
    /// Requesters whose object is smaller than their target (or missing).
    short: BTreeSet<i32>,
    shape: Shape,
    /// False: every event recomputes everything (for tests to compare).
    incremental: bool,
}

impl NodeManager {
    pub fn new(nodes: Vec<Node>, online: impl IntoIterator<Item = usize>, max_level: u32) -> Self {
        let online: BTreeSet<usize> = online.into_iter().collect();
        NodeManager {
            grid: Grid::new(&nodes, &online),
            largest: Self::largest_object(&nodes, max_level),
            nodes,
            online,
            max_level,
            untagged_load: 0,
            requesters: BTreeMap::new(),
            places: BTreeMap::new(),
            objects: BTreeMap::new(),
            next_seq: 0,
            next_gen: 1,
            share: FastShare::default(),
            nr_defrag_moves: 0,
            allowed: BTreeMap::new(),
            within: BTreeMap::new(),
            running_on: BTreeMap::new(),
            sum_want: 0,
            short: BTreeSet::new(),
            shape: Shape::Other,
            incremental: true,
        }
    }

    /// The CPUs `pid` may run on (its affinity; None or all of ours: no
    /// constraint). A requester whose constraint changed is placed again.
    pub fn set_allowed(&mut self, pid: i32, cpus: Option<BTreeSet<usize>>) -> Vec<Change> {
        self.constrain(pid, cpus, |m| &mut m.allowed)
    }

    /// The CPUs `pid`'s cgroup may use (its cpuset; None or all of ours: no
    /// constraint). A requester whose constraint changed is placed again.
    pub fn set_cpuset(&mut self, pid: i32, cpus: Option<BTreeSet<usize>>) -> Vec<Change> {
        self.constrain(pid, cpus, |m| &mut m.within)
    }

    /// `pid`'s entry in the constraint `map` picks (kept only where it
    /// leaves out one of ours), and a new placement if it changed.
    fn constrain(
        &mut self,
        pid: i32,
        cpus: Option<BTreeSet<usize>>,
        map: fn(&mut Self) -> &mut BTreeMap<i32, BTreeSet<usize>>,
    ) -> Vec<Change> {
        let cpus = cpus.filter(|set| self.cpus().any(|c| !set.contains(&c)));
        let changed = match cpus {
            Some(set) => map(self).insert(pid, set.clone()).as_ref() != Some(&set),
            None => map(self).remove(&pid).is_some(),
        };
        if !changed || !self.requesters.contains_key(&pid) {
            return Vec::new();
        }
        self.decide([pid].into(), None)
    }

    pub fn object(&self, pid: i32) -> Option<&Object> {
        self.objects.get(&pid)
    }

    pub fn objects(&self) -> &BTreeMap<i32, Object> {
        &self.objects
    }

    pub fn requesters(&self) -> impl Iterator<Item = (i32, Request)> + '_ {
        self.requesters.iter().map(|(&pid, r)| (pid, r.req))
    }

    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Size of `pid`'s object (0: none), for tests and status.
    pub fn size_of(&self, pid: i32) -> usize {
        self.objects.get(&pid).map_or(0, |o| o.cpus.len())
    }

    /// A task asks for an object (again: a changed request replaces the old one).
    pub fn request(&mut self, pid: i32, req: Request) -> Vec<Change> {
        self.request_as(pid, req, Member::default())
    }

    /// `request` with the task's class for the fast queue: explicit high
    /// priority, and the group (cgroup) counted for the low-parallelism boost.
    pub fn request_as(&mut self, pid: i32, req: Request, member: Member) -> Vec<Change> {
        let seq = match self.requesters.get(&pid) {
            Some(r) if r.req == req => {
                // A new class counts from the next period: nothing moves now.
                self.share.join(pid, req.weight, r.seq, member);
                return Vec::new();
            }
            Some(r) => r.seq,
            None => {
                self.next_seq += 1;
                self.next_seq - 1
            }
        };
        // A changed request keeps its target until the rebalance decides
        // again: the targets that change are found by comparing with it.
        let target = self.requesters.get(&pid).map_or(0, |r| r.target);
        self.forget(pid);
        self.requesters.insert(pid, Requester { req, seq, target });
        self.sum_want += self.want(req);
        self.share.join(pid, req.weight, seq, member);
        self.decide([pid].into(), None)
    }

    /// Take `pid` out of the sum of wants (before its request changes or it
    /// leaves); whether it was a requester.
    fn forget(&mut self, pid: i32) -> bool {
        let Some(req) = self.requesters.get(&pid).map(|r| r.req) else { return false };
        self.sum_want -= self.want(req);
        true
    }

    /// A task no longer wants an object (exit, sleep, untag).
    pub fn release(&mut self, pid: i32) -> Vec<Change> {
        self.allowed.remove(&pid);
        self.within.remove(&pid);
        if !self.withdraw(pid) {
            return Vec::new();
        }
        self.decide([pid].into(), None)
    }

    /// `pid` is no requester any more (whether it was).
    fn withdraw(&mut self, pid: i32) -> bool {
        if !self.forget(pid) {
            return false;
        }
        self.requesters.remove(&pid);
        self.share.leave(pid);
        true
    }

    /// Drop requesters that are gone (`alive` says false): what makes CPUs
    /// move even if an exit notification was lost.
    pub fn reconcile(&mut self, alive: impl Fn(i32) -> bool) -> Vec<Change> {
        let gone: BTreeSet<i32> = self.requesters.keys().copied().filter(|&pid| !alive(pid)).collect();
        if gone.is_empty() {
            return Vec::new();
        }
        for &pid in &gone {
            self.withdraw(pid);
            self.allowed.remove(&pid);
            self.within.remove(&pid);
        }
        self.decide(gone, None)
    }

    /// A requester runs or sleeps (the agent's view): the fast queue serves
    /// awake requesters first and counts them for the boost. Nothing moves
    /// before the next period.
    pub fn set_awake(&mut self, pid: i32, awake: bool) {
        self.share.set_awake(pid, awake);
    }

    /// Boost groups with at most this many awake requesters (0: never).
    pub fn set_boost_threshold(&mut self, threshold: usize) {
        self.share.set_boost_threshold(threshold);
    }

    /// The fast queue, for tests and status.
    pub fn share(&self) -> &FastShare {
        &self.share
    }

    /// Do requesters outnumber the pairs (so that the pairs rotate)?
    pub fn contended(&self) -> bool {
        let n = self.pairs(self.requesters.len());
        n > 0 && self.requesters.len() > n
    }

    /// An accounting period starts (AASH's 30 ms): who holds the pairs is
    /// decided again. Nothing changes while every requester has a pair.
    pub fn rotate(&mut self) -> Vec<Change> {
        self.rotate_with(|_| None)
    }

    /// `rotate`, with the runnable tasks of a group where known (BPF's
    /// count), which bounds its awake requesters for the boost.
    pub fn rotate_with(&mut self, runnable: impl Fn(u64) -> Option<usize>) -> Vec<Change> {
        self.rotate_at(runnable, BTreeMap::new())
    }

    /// `rotate_with`, knowing where requesters run now (`running_on`: pid
    /// to CPU, as the kernel last placed them): a pair a requester gains
    /// around the CPU it waits on gets it as representative, so neither it
    /// nor the holder it replaces migrates.
    pub fn rotate_at(&mut self, runnable: impl Fn(u64) -> Option<usize>, running_on: BTreeMap<i32, usize>) -> Vec<Change> {
        let n = self.pairs(self.requesters.len());
        let chosen = self.share.rotate(n, &self.holders(), runnable);
        if self.requesters.len() <= n {
            return Vec::new();
        }
        self.running_on = running_on;
        let changes = self.decide(BTreeSet::new(), Some(chosen));
        self.running_on.clear();
        changes
    }

    fn holders(&self) -> BTreeSet<i32> {
        self.objects.keys().copied().filter(|pid| self.requesters.contains_key(pid)).collect()
    }

    pub fn set_online(&mut self, cpu: usize, online: bool) -> Vec<Change> {
        let changed = if online { self.online.insert(cpu) } else { self.online.remove(&cpu) };
        if !changed {
            return Vec::new();
        }
        // The holder of a CPU gone offline is placed again.
        let holder = self.grid.slot_of(cpu).and_then(|(n, s)| self.grid.set_online(n, s, online));
        self.decide(holder.into_iter().collect(), None)
    }

    /// The CPUs it believes online (from events, reconciled with the kernel's list).
    pub fn online(&self) -> impl Iterator<Item = usize> + '_ {
        self.online.iter().copied()
    }

    /// Every CPU of every node.
    pub fn cpus(&self) -> impl Iterator<Item = usize> + '_ {
        self.nodes.iter().flat_map(|n| n.slots.iter().copied())
    }

    /// Does any node hold this CPU?
    pub fn has_cpu(&self, cpu: usize) -> bool {
        self.grid.slot_of(cpu).is_some()
    }

    /// New node layout (e.g. re-read after a CPU that was offline at start
    /// came online). Objects that are still aligned blocks stay where they
    /// are; everything is placed again.
    pub fn set_nodes(&mut self, nodes: Vec<Node>) -> Vec<Change> {
        self.nodes = nodes;
        self.grid = Grid::new(&self.nodes, &self.online);
        self.largest = Self::largest_object(&self.nodes, self.max_level);
        self.sum_want = self.requesters.values().map(|r| self.want(r.req)).sum();
        let mut places = BTreeMap::new();
        for (&pid, o) in &self.objects {
            let size = o.cpus.len();
            for (n, node) in self.nodes.iter().enumerate() {
                if let Some(at) = node.slots.iter().position(|&c| c == o.cpus[0]) {
                    let start = at / size * size;
                    let p = Place { node: n, start, size, rep: at - start };
                    if node.slots.len() >= start + size && self.cpus_of(&p) == o.cpus {
                        places.insert(pid, p);
                    }
                }
            }
        }
        self.places = places;
        self.place_full(None)
    }

    pub fn untagged_load(&self) -> usize {
        self.untagged_load
    }

    /// Runnable untagged tasks (see `untagged_load`).
    pub fn set_untagged_load(&mut self, n: usize) -> Vec<Change> {
        if n == self.untagged_load {
            return Vec::new();
        }
        self.untagged_load = n;
        self.decide(BTreeSet::new(), None)
    }

    /// Recompute every object from scratch; returns the tasks whose object
    /// changed. Events do not need it (they decide the same incrementally).
    pub fn rebalance(&mut self) -> Vec<Change> {
        self.place_full(None)
    }

    /// Off: every event recomputes everything, as `rebalance()` (the
    /// reference the incremental path is compared with).
    #[cfg(test)]
    pub(crate) fn set_incremental(&mut self, on: bool) {
        self.incremental = on;
    }

    /// Rebalance after an event: `dirty`, the requesters it touched (came,
    /// went, changed, or held a CPU gone offline); `chosen`, the pair holders
    /// a period's start chose.
    fn decide(&mut self, dirty: BTreeSet<i32>, chosen: Option<BTreeSet<i32>>) -> Vec<Change> {
        if !self.incremental {
            return self.place_full(chosen);
        }
        #[cfg(debug_assertions)]
        let reference = (self.clone(), chosen.clone());
        let changes = self.place_incremental(dirty, chosen);
        #[cfg(debug_assertions)]
        self.verify(reference, &changes);
        changes
    }

    /// Recompute every target, then place everyone as if nothing were placed,
    /// starting from where they were.
    fn place_full(&mut self, chosen: Option<BTreeSet<i32>>) -> Vec<Change> {
        let (order, _) = self.retarget_all(chosen);
        let before = std::mem::take(&mut self.places);
        self.grid.clear_all();
        // Whose object may change: who had one, who may get one, who was short.
        let mut touched: BTreeSet<i32> = self.objects.keys().chain(before.keys()).copied().collect();
        touched.extend(order.iter().map(|&(pid, _)| pid).chain(self.short.iter().copied()));
        self.settle(order, touched, before)
    }

    /// Only the requesters whose object can change: those the event touched,
    /// those whose target changed, those short of their target.
    fn place_incremental(&mut self, dirty: BTreeSet<i32>, chosen: Option<BTreeSet<i32>>) -> Vec<Change> {
        let changed = self.retarget(&dirty, chosen);
        let mut touched = dirty;
        touched.extend(changed);
        touched.extend(self.short.iter().copied());
        let mut before = BTreeMap::new();
        let mut order = Vec::new();
        for &pid in &touched {
            if let Some(p) = self.places.remove(&pid) {
                self.grid.clear(p.node, p.start, p.size);
                before.insert(pid, p);
            }
            match self.requesters.get(&pid) {
                Some(r) if r.target >= 2 => order.push((priority(pid, r), r.target)),
                _ => {}
            }
        }
        order.sort_unstable();
        let order = order.into_iter().map(|((_, _, pid), target)| (pid, target)).collect();
        self.settle(order, touched, before)
    }

    fn priority(&self, pid: i32) -> Option<Priority> {
        self.requesters.get(&pid).map(|r| priority(pid, r))
    }
}

/// A requester's place in priority order: weight, then arrival.
type Priority = (Reverse<u32>, u64, i32);

fn priority(pid: i32, r: &Requester) -> Priority {
    (Reverse(r.req.weight), r.seq, pid)
}
