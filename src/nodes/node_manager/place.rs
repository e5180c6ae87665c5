//! Placement (the module comment's "Placement" and "Representative"): the
//! requesters a rebalance looks at (`touched`; in the full recompute,
//! everyone with an object or a target) are kept where they fit, then the
//! rest are placed largest first, displacing smaller objects when no free
//! block fits (defragmentation); objects on slower cores move up to free
//! faster ones; what changed is published. Requesters not touched hold
//! their blocks in the grid throughout, as the full recompute's first pass
//! would keep them.

use super::{Change, NodeManager, Object, Place};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};

impl NodeManager {
    /// Place the requesters in `order` (those of the `touched` with a
    /// target of 2 or more, with it, in priority order; their old places,
    /// `before`, already off the grid) and publish what changed for the
    /// `touched`. Requesters the placement displaces or moves join them.
    pub(super) fn settle(
        &mut self,
        order: Vec<(i32, usize)>,
        mut touched: BTreeSet<i32>,
        mut before: BTreeMap<i32, Place>,
    ) -> Vec<Change> {
        // Keep what still fits where it is: same size, or the half (quarter...)
        // that holds its representative.
        let mut pending: Vec<(i32, usize)> = Vec::new();
        for (pid, size) in order {
            let kept = before.get(&pid).filter(|p| size <= p.size).map(|p| Place {
                start: p.start + p.rep / size * size,
                size,
                rep: p.rep % size,
                ..*p
            });
            match kept {
                Some(k)
                    if self.grid.block_online(k.node, k.start, size)
                        && self.block_within(pid, k.node, k.start, size)
                        && self.slot_allowed(pid, k.node, k.start + k.rep) =>
                {
                    self.grid.take(k.node, k.start, size, pid);
                    self.places.insert(pid, k);
                }
                _ => pending.push((pid, size)),
            }
        }
        self.place_pending(pending, &mut touched, &mut before);
        self.upgrade(&mut touched);
        let changes = self.publish(&touched);
        for pid in touched {
            match self.requesters.get(&pid) {
                Some(r) if r.target >= 2 && self.places.get(&pid).map_or(0, |p| p.size) < r.target => {
                    self.short.insert(pid);
                }
                _ => {
                    self.short.remove(&pid);
                }
            }
        }
        changes
    }

    /// Place the rest, largest first, pinned ones first within a size (fewer
    /// blocks fit them), then in order (priority, then displaced ones as
    /// they were displaced), each at the largest size a block is found for;
    /// 4 tries per requester in all, so that displacements end.
    fn place_pending(&mut self, pending: Vec<(i32, usize)>, touched: &mut BTreeSet<i32>, before: &mut BTreeMap<i32, Place>) {
        let key = |m: &Self, pid: i32, size: usize, i: usize| (Reverse(size), !m.allowed.contains_key(&pid), i, pid);
        let mut queue: BTreeSet<_> = pending.iter().enumerate().map(|(i, &(pid, size))| key(self, pid, size, i)).collect();
        let mut next = pending.len();
        let mut budget = 4 * (self.requesters.len() + 1);
        while let Some((Reverse(mut size), _, _, pid)) = queue.pop_first() {
            budget = match budget.checked_sub(1) {
                Some(b) => b,
                None => break,
            };
            while size >= 2 {
                // Preferred: where it was before this rebalance.
                let prefer = before.get(&pid).copied();
                if let Some((node, start, rep, evict)) = self.find_block(pid, size, prefer) {
                    for victim in evict {
                        let vp = self.places.remove(&victim).unwrap();
                        self.grid.clear(vp.node, vp.start, vp.size);
                        if touched.insert(victim) {
                            before.insert(victim, vp);
                        }
                        self.nr_defrag_moves += 1;
                        queue.insert(key(self, victim, vp.size, next));
                        next += 1;
                    }
                    self.grid.take(node, start, size, pid);
                    self.places.insert(pid, Place { node, start, size, rep });
                    break;
                }
                size /= 2;
            }
        }
    }

    /// Objects on slower cores move to a free block of the same size on
    /// faster ones, in priority order (AASH: a fast context never idles
    /// while a task that wants one runs on a slow one). The keep pass above
    /// leaves an object where it is: a task that got the slow pair while the
    /// fast one was still held (its holder's exit reported after the new
    /// request) kept the slow pair with the fast one idle for good (hybrid
    /// on 6.18). Only free blocks, only strictly faster: each object moves
    /// up at most once per capacity step, and no one is displaced. Objects
    /// on the fastest cores have nowhere to go and are not looked at (on a
    /// machine of one capacity, none is).
    fn upgrade(&mut self, touched: &mut BTreeSet<i32>) {
        let top = self.nodes.iter().map(|n| n.cap).max().unwrap_or(0);
        if self.nodes.iter().all(|n| n.cap == top) {
            return;
        }
        let mut slow: Vec<_> = self
            .places
            .iter()
            .filter(|(_, p)| self.nodes[p.node].cap < top)
            .filter_map(|(&pid, _)| self.priority(pid))
            .collect();
        slow.sort_unstable();
        for (_, _, pid) in slow {
            let p = self.places[&pid];
            let cap = self.nodes[p.node].cap;
            let to = self.nodes.iter().enumerate().filter(|(_, n)| n.cap > cap).find_map(|(n, _)| {
                self.grid
                    .free_blocks(n, p.size)
                    .find_map(|start| self.rep_in(pid, n, start, p.size).map(|rep| Place { node: n, start, size: p.size, rep }))
            });
            let Some(to) = to else { continue };
            self.grid.clear(p.node, p.start, p.size);
            self.grid.take(to.node, to.start, to.size, pid);
            self.places.insert(pid, to);
            touched.insert(pid);
        }
    }

    /// Objects for the touched requesters: what changed gets a new
    /// generation (placed ones in pid order, then the withdrawn ones).
    fn publish(&mut self, touched: &BTreeSet<i32>) -> Vec<Change> {
        let mut changes = Vec::new();
        for &pid in touched {
            let Some(p) = self.places.get(&pid) else { continue };
            let cpus = self.cpus_of(p);
            if self.objects.get(&pid).is_some_and(|o| o.cpus == cpus) {
                continue;
            }
            let o = Object { cpus, gen: self.next_gen };
            self.next_gen = self.next_gen.wrapping_add(1).max(1);
            changes.push(Change { pid, object: Some(o.clone()) });
            self.objects.insert(pid, o);
        }
        for &pid in touched {
            if !self.places.contains_key(&pid) && self.objects.remove(&pid).is_some() {
                changes.push(Change { pid, object: None });
            }
        }
        changes
    }

    /// A place's CPUs, representative first, then by distance from it:
    /// every power-of-two prefix is an aligned block.
    pub(super) fn cpus_of(&self, p: &Place) -> Vec<usize> {
        (0..p.size).map(|i| self.nodes[p.node].slots[p.start + (p.rep ^ i)]).collect()
    }

    /// May `pid` run on the CPU at `slot` of `node` (its affinity)?
    fn slot_allowed(&self, pid: i32, node: usize, slot: usize) -> bool {
        self.allowed.get(&pid).is_none_or(|set| set.contains(&self.nodes[node].slots[slot]))
    }

    /// Is every CPU of the block at `start` of `node` one that `pid`'s
    /// cgroup may use (its cpuset)? An object never holds a CPU outside it:
    /// a container's exclusive CPUs (CPU Manager's static policy) are
    /// another container's.
    fn block_within(&self, pid: i32, node: usize, start: usize, size: usize) -> bool {
        self.within
            .get(&pid)
            .is_none_or(|set| self.nodes[node].slots[start..start + size].iter().all(|c| set.contains(c)))
    }

    /// The one rule for where `pid`'s object may be, as the representative's
    /// offset in the block at `start` of `node`: the whole block inside its
    /// cpuset, and the representative a CPU it may run on: where it runs now
    /// (known at a rotation) if that is in the block and allowed, else the
    /// block's first CPU if allowed, else None.
    fn rep_in(&self, pid: i32, node: usize, start: usize, size: usize) -> Option<usize> {
        if !self.block_within(pid, node, start, size) {
            return None;
        }
        let slots = &self.nodes[node].slots[start..start + size];
        let here = self.running_on.get(&pid).and_then(|c| slots.iter().position(|s| s == c));
        here.or(Some(0)).filter(|&r| self.slot_allowed(pid, node, start + r))
    }

    /// An aligned, online block of `size` slots where `pid`'s object may be
    /// (`rep_in`): a free one (preferring the block holding
    /// `prefer`, or else the CPU it runs on, then the lowest), else one whose
    /// occupants are all smaller objects, or, for a pinned `pid`, unpinned
    /// objects of its size (they fit elsewhere; it may fit only here),
    /// displacing as few CPUs as possible. Returns (node, start,
    /// representative's offset, objects to move).
    fn find_block(&self, pid: i32, size: usize, prefer: Option<Place>) -> Option<(usize, usize, usize, Vec<i32>)> {
        if let Some((node, start, rep)) = self.free_block(pid, size, prefer) {
            return Some((node, start, rep, Vec::new()));
        }
        // No free block: the one displacing the fewest CPUs (each costs
        // more than any preference), then the preferences, then the lowest.
        let pinned = self.allowed.contains_key(&pid);
        let here = self.running_on.get(&pid).copied();
        let mut best: Option<(usize, usize, usize, usize, Vec<i32>)> = None; // (cost, node, start, rep, evict)
        for (n, node) in self.nodes.iter().enumerate() {
            let nr = node.slots.len() / size * size;
            for start in (0..nr).step_by(size) {
                if !self.grid.block_online(n, start, size) {
                    continue;
                }
                let Some(rep) = self.rep_in(pid, n, start, size) else { continue };
                let mut evict: Vec<i32> = Vec::new();
                let mut displaced = 0;
                let mut ok = true;
                for s in start..start + size {
                    if let Some(o) = self.grid.owner(n, s) {
                        let other = self.places[&o].size;
                        let movable = other < size || (pinned && other == size && !self.allowed.contains_key(&o));
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

    /// `find_block`'s choice among free blocks, found without a walk over
    /// every block: a free block displaces nobody, so it costs less than any
    /// other; among free ones the block holding `prefer` comes first, then
    /// the one holding the CPU `pid` runs on, then the lowest (node order,
    /// then slot order). None: no free block where its object may be.
    fn free_block(&self, pid: i32, size: usize, prefer: Option<Place>) -> Option<(usize, usize, usize)> {
        let fits = |node: usize, start: usize| {
            let inside = start + size <= self.nodes[node].slots.len() / size * size;
            inside && self.grid.block_free(node, start, size)
        };
        let home = prefer.map(|p| (p.node, p.start / size * size));
        let here = self.running_on.get(&pid).and_then(|&c| self.grid.slot_of(c)).map(|(n, s)| (n, s / size * size));
        for (node, start) in home.into_iter().chain(here) {
            if fits(node, start) {
                if let Some(rep) = self.rep_in(pid, node, start, size) {
                    return Some((node, start, rep));
                }
            }
        }
        (0..self.nodes.len()).find_map(|n| {
            self.grid.free_blocks(n, size).find_map(|start| self.rep_in(pid, n, start, size).map(|rep| (n, start, rep)))
        })
    }
}
