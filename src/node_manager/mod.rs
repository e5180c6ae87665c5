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

use crate::fast_share::{FastShare, Member};
use crate::node::Node;
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

#[derive(Debug)]
pub struct NodeManager {
    nodes: Vec<Node>,
    online: BTreeSet<usize>,
    max_level: u32,
    /// Runnable untagged tasks: objects come first from the CPUs they leave
    /// idle (Fig. 6); when there are none, pairs over busy CPUs (Fig. 7).
    untagged_load: usize,
    requesters: BTreeMap<i32, Requester>,
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
    /// Where each requester runs (or waits), during a rotation's placement:
    /// the representative of a block placed for it there.
    running_on: BTreeMap<i32, usize>,
}

impl NodeManager {
    pub fn new(nodes: Vec<Node>, online: impl IntoIterator<Item = usize>, max_level: u32) -> Self {
        NodeManager {
            nodes,
            online: online.into_iter().collect(),
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
            running_on: BTreeMap::new(),
        }
    }

    /// The CPUs `pid` may run on (its affinity; None or all of ours: no
    /// constraint). A requester whose constraint changed is placed again.
    pub fn set_allowed(&mut self, pid: i32, cpus: Option<BTreeSet<usize>>) -> Vec<Change> {
        let cpus = cpus.filter(|set| self.cpus().any(|c| !set.contains(&c)));
        let changed = match cpus {
            Some(set) => self.allowed.insert(pid, set.clone()).as_ref() != Some(&set),
            None => self.allowed.remove(&pid).is_some(),
        };
        if !changed || !self.requesters.contains_key(&pid) {
            return Vec::new();
        }
        self.rebalance()
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
        let seq = match self.requesters.get_mut(&pid) {
            Some(r) if r.req == req => {
                // A new class counts from the next period: nothing moves now.
                self.share.join(pid, req.weight, r.seq, member);
                return Vec::new();
            }
            Some(r) => {
                r.req = req;
                r.seq
            }
            None => {
                self.requesters.insert(pid, Requester { req, seq: self.next_seq });
                self.next_seq += 1;
                self.next_seq - 1
            }
        };
        self.share.join(pid, req.weight, seq, member);
        self.rebalance()
    }

    /// A task no longer wants an object (exit, sleep, untag).
    pub fn release(&mut self, pid: i32) -> Vec<Change> {
        self.allowed.remove(&pid);
        if self.requesters.remove(&pid).is_none() {
            return Vec::new();
        }
        self.share.leave(pid);
        self.rebalance()
    }

    /// Drop requesters that are gone (`alive` says false): what makes CPUs
    /// move even if an exit notification was lost.
    pub fn reconcile(&mut self, alive: impl Fn(i32) -> bool) -> Vec<Change> {
        let gone: Vec<i32> = self.requesters.keys().copied().filter(|&pid| !alive(pid)).collect();
        if gone.is_empty() {
            return Vec::new();
        }
        for pid in gone {
            self.requesters.remove(&pid);
            self.allowed.remove(&pid);
            self.share.leave(pid);
        }
        self.rebalance()
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
        let changes = self.place(Some(chosen));
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
        self.rebalance()
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
        self.nodes.iter().any(|n| n.slots.contains(&cpu))
    }

    /// New node layout (e.g. re-read after a CPU that was offline at start
    /// came online). Objects that are still aligned blocks stay where they are.
    pub fn set_nodes(&mut self, nodes: Vec<Node>) -> Vec<Change> {
        self.nodes = nodes;
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
        self.rebalance()
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
        self.rebalance()
    }

    fn largest_object(&self) -> usize {
        let node_max = self.nodes.iter().map(|n| n.slots.len()).max().unwrap_or(0);
        let mut size = 1usize << self.max_level;
        while size > node_max {
            size >>= 1;
        }
        size
    }

    /// Requesters in priority order: weight, then arrival.
    fn by_priority(&self) -> Vec<(i32, Request)> {
        let mut order: Vec<(i32, Request, u64)> =
            self.requesters.iter().map(|(&pid, r)| (pid, r.req, r.seq)).collect();
        order.sort_unstable_by_key(|&(_, req, seq)| (std::cmp::Reverse(req.weight), seq));
        order.into_iter().map(|(pid, req, _)| (pid, req)).collect()
    }

    /// CPUs objects may be built from for `nr` requesters.
    fn supply(&self, nr: usize) -> usize {
        // Only CPUs some node holds can be placed: an online CPU outside
        // every node (--node-cpus a subset) is no supply (bench Fig. 6 got
        // 4, 4, 0 for three tasks on 8 of 10 CPUs).
        let online = self.cpus().filter(|c| self.online.contains(c)).count();
        let spare = online.saturating_sub(self.untagged_load);
        // Over-provisioned: what the untagged tasks leave idle. Else every
        // CPU: objects over busy CPUs are the right to borrow, which the
        // virtual threads and the tax use at run time.
        if spare >= 2 * nr {
            spare
        } else {
            online
        }
    }

    /// Pairs (fast contexts) there are for `nr` requesters: the supply's,
    /// and no more than the aligned online pairs that can be placed.
    fn pairs(&self, nr: usize) -> usize {
        if self.largest_object() < 2 {
            return 0;
        }
        let aligned: usize = (0..self.nodes.len())
            .map(|n| (0..self.nodes[n].slots.len() / 2).filter(|&i| self.block_online(n, 2 * i, 2)).count())
            .sum();
        (self.supply(nr) / 2).min(aligned)
    }

    /// Object sizes by the rules in the module comment, in `order`'s order;
    /// `fast`: who holds the pairs when requesters outnumber them.
    fn targets(&self, order: &[(i32, Request)], fast: Option<&BTreeSet<i32>>) -> Vec<usize> {
        if let Some(fast) = fast {
            return order.iter().map(|(pid, _)| if fast.contains(pid) { 2 } else { 0 }).collect();
        }
        let supply = self.supply(order.len());
        let cap = self.largest_object();
        let want: Vec<usize> = order.iter().map(|(_, r)| (1usize << r.level.min(31)).min(cap)).collect();
        if cap < 2 {
            return vec![0; order.len()];
        }
        if want.iter().sum::<usize>() <= supply {
            return want;
        }
        let mut out = vec![0; order.len()];
        let mut left = supply;
        for size in out.iter_mut() {
            if left < 2 {
                break;
            }
            *size = 2;
            left -= 2;
        }
        for (size, &want) in out.iter_mut().zip(&want) {
            while *size >= 2 && *size < want && left >= *size {
                left -= *size;
                *size *= 2;
            }
        }
        out
    }

    fn block_online(&self, node: usize, start: usize, size: usize) -> bool {
        self.nodes[node].slots[start..start + size].iter().all(|c| self.online.contains(c))
    }

    /// Recompute every object; returns the tasks whose object changed.
    pub fn rebalance(&mut self) -> Vec<Change> {
        self.place(None)
    }

    /// `rebalance`, with the pair holders a period's start chose (`chosen`);
    /// None: the current holders keep theirs, the fast queue fills the rest.
    fn place(&mut self, chosen: Option<BTreeSet<i32>>) -> Vec<Change> {
        let order = self.by_priority();
        let n = self.pairs(order.len());
        let fast = (order.len() > n).then(|| chosen.unwrap_or_else(|| self.share.pick(n, &self.holders())));
        let targets = self.targets(&order, fast.as_ref());
        // owner[node][slot]
        let mut owner: Vec<Vec<Option<i32>>> = self.nodes.iter().map(|n| vec![None; n.slots.len()]).collect();
        let mut placed: BTreeMap<i32, Place> = BTreeMap::new();
        let mut pending: Vec<(i32, usize)> = Vec::new();

        // Keep what still fits where it is: same size, or its first half.
        for (&(pid, _), &size) in order.iter().zip(&targets) {
            if size < 2 {
                continue;
            }
            // The half (quarter...) that holds its representative.
            let kept = self.places.get(&pid).filter(|p| size <= p.size).map(|p| Place {
                start: p.start + p.rep / size * size,
                size,
                rep: p.rep % size,
                ..*p
            });
            match kept {
                Some(keep) if self.block_online(keep.node, keep.start, size) && self.slot_allowed(pid, keep.node, keep.start + keep.rep) => {
                    for s in keep.start..keep.start + size {
                        owner[keep.node][s] = Some(pid);
                    }
                    placed.insert(pid, keep);
                }
                _ => pending.push((pid, size)),
            }
        }

        // Place the rest, largest first, pinned ones first within a size
        // (fewer blocks fit them), then priority order.
        let mut budget = 4 * (order.len() + 1);
        while let Some(i) = (0..pending.len())
            .max_by_key(|&i| (pending[i].1, self.allowed.contains_key(&pending[i].0), std::cmp::Reverse(i)))
        {
            let (pid, mut size) = pending.remove(i);
            budget = match budget.checked_sub(1) {
                Some(b) => b,
                None => break,
            };
            loop {
                if size < 2 {
                    break;
                }
                let prefer = self.places.get(&pid).copied();
                if let Some((node, start, rep, evict)) = self.find_block(&owner, &placed, pid, size, prefer) {
                    for victim in evict {
                        let vp = placed.remove(&victim).unwrap();
                        for s in vp.start..vp.start + vp.size {
                            owner[vp.node][s] = None;
                        }
                        self.nr_defrag_moves += 1;
                        pending.push((victim, vp.size));
                    }
                    for s in start..start + size {
                        owner[node][s] = Some(pid);
                    }
                    placed.insert(pid, Place { node, start, size, rep });
                    break;
                }
                size /= 2;
            }
        }

        self.upgrade(&order, &mut owner, &mut placed);

        // Publish: what changed gets a new generation.
        let mut changes = Vec::new();
        let mut objects = BTreeMap::new();
        for (&pid, p) in &placed {
            let cpus = self.cpus_of(p);
            let obj = match self.objects.get(&pid) {
                Some(o) if o.cpus == cpus => o.clone(),
                _ => {
                    let o = Object { cpus, gen: self.next_gen };
                    self.next_gen = self.next_gen.wrapping_add(1).max(1);
                    changes.push(Change { pid, object: Some(o.clone()) });
                    o
                }
            };
            objects.insert(pid, obj);
        }
        for pid in self.objects.keys() {
            if !objects.contains_key(pid) {
                changes.push(Change { pid: *pid, object: None });
            }
        }
        self.objects = objects;
        self.places = placed;
        changes
    }

    /// Objects kept on slower cores move to a free block of the same size on
    /// faster ones, in priority order (AASH: a fast context never idles
    /// while a task that wants one runs on a slow one). The keep pass above
    /// leaves an object where it is: a task that got the slow pair while the
    /// fast one was still held (its holder's exit reported after the new
    /// request) kept the slow pair with the fast one idle for good (hybrid
    /// on 6.18). Only free blocks, only strictly faster: each object moves
    /// up at most once per capacity step, and no one is displaced.
    fn upgrade(&self, order: &[(i32, Request)], owner: &mut [Vec<Option<i32>>], placed: &mut BTreeMap<i32, Place>) {
        for &(pid, _) in order {
            let Some(p) = placed.get(&pid).copied() else { continue };
            let cap = self.nodes[p.node].cap;
            let to = self.nodes.iter().enumerate().filter(|(_, n)| n.cap > cap).find_map(|(n, node)| {
                let nr = node.slots.len() / p.size * p.size;
                (0..nr).step_by(p.size).find_map(|start| {
                    let free = (start..start + p.size).all(|s| owner[n][s].is_none());
                    if !free || !self.block_online(n, start, p.size) {
                        return None;
                    }
                    self.rep_in(pid, n, start, p.size).map(|rep| Place { node: n, start, size: p.size, rep })
                })
            });
            let Some(to) = to else { continue };
            for s in p.start..p.start + p.size {
                owner[p.node][s] = None;
            }
            for s in to.start..to.start + to.size {
                owner[to.node][s] = Some(pid);
            }
            placed.insert(pid, to);
        }
    }

    /// A place's CPUs, representative first, then by distance from it:
    /// every power-of-two prefix is an aligned block.
    fn cpus_of(&self, p: &Place) -> Vec<usize> {
        (0..p.size).map(|i| self.nodes[p.node].slots[p.start + (p.rep ^ i)]).collect()
    }

    /// May `pid` run on the CPU at `slot` of `node`?
    fn slot_allowed(&self, pid: i32, node: usize, slot: usize) -> bool {
        self.allowed.get(&pid).is_none_or(|set| set.contains(&self.nodes[node].slots[slot]))
    }

    /// The representative of `pid` in the block at `start` of `node`, as an
    /// offset: where it runs now (known at a rotation) if that is in the
    /// block and allowed, else the block's first CPU if allowed, else None.
    fn rep_in(&self, pid: i32, node: usize, start: usize, size: usize) -> Option<usize> {
        let slots = &self.nodes[node].slots[start..start + size];
        let here = self.running_on.get(&pid).and_then(|c| slots.iter().position(|s| s == c));
        here.or(Some(0)).filter(|&r| self.slot_allowed(pid, node, start + r))
    }

    /// An aligned, online block of `size` slots with a CPU `pid` may run on
    /// for its representative: a free one (preferring the block holding
    /// `prefer`, or else the CPU it runs on, then the lowest), else one whose
    /// occupants are all smaller objects, or, for a pinned `pid`, unpinned
    /// objects of its size (they fit elsewhere; it may fit only here),
    /// displacing as few CPUs as possible. Returns (node, start,
    /// representative's offset, objects to move).
    fn find_block(
        &self,
        owner: &[Vec<Option<i32>>],
        placed: &BTreeMap<i32, Place>,
        pid: i32,
        size: usize,
        prefer: Option<Place>,
    ) -> Option<(usize, usize, usize, Vec<i32>)> {
        let pinned = self.allowed.contains_key(&pid);
        let here = self.running_on.get(&pid).copied();
        let mut best: Option<(usize, usize, usize, usize, Vec<i32>)> = None; // (cost, node, start, rep, evict)
        for (n, node) in self.nodes.iter().enumerate() {
            let nr = node.slots.len() / size * size;
            for start in (0..nr).step_by(size) {
                if !self.block_online(n, start, size) {
                    continue;
                }
                let Some(rep) = self.rep_in(pid, n, start, size) else { continue };
                let mut evict: Vec<i32> = Vec::new();
                let mut displaced = 0;
                let mut ok = true;
                for s in start..start + size {
                    if let Some(o) = owner[n][s] {
                        let movable = placed[&o].size < size
                            || (pinned && placed[&o].size == size && !self.allowed.contains_key(&o));
                        if !movable {
                            ok = false;
                            break;
                        }
                        displaced += 1;
                        if !evict.contains(&o) {
                            evict.push(o);
                        }
                    }
                }
                if !ok {
                    continue;
                }
                let home = prefer.is_some_and(|p| p.node == n && p.start >= start && p.start < start + size);
                let runs_here = here.is_some_and(|c| node.slots[start..start + size].contains(&c));
                let cost = displaced * 4 + 2 * usize::from(!home) + usize::from(!runs_here);
                if best.as_ref().is_none_or(|b| cost < b.0) {
                    best = Some((cost, n, start, rep, evict));
                }
            }
        }
        best.map(|(_, n, s, r, e)| (n, s, r, e))
    }
}
