//! Object sizes (the module comment's "Supply" and "Targets"): computed for
//! everyone by the full recompute, and changed only where an event can
//! change them by the incremental one. Each requester keeps its target
//! (`Requester::target`); what changed is returned, so that the placement
//! looks at those.

use super::{priority, NodeManager, Priority, Request, Shape};
use std::collections::BTreeSet;

impl NodeManager {
    /// The largest object a node can hold: 2^max_level, halved until the
    /// largest node holds it.
    pub(super) fn largest_object(nodes: &[crate::nodes::node::Node], max_level: u32) -> usize {
        let node_max = nodes.iter().map(|n| n.slots.len()).max().unwrap_or(0);
        let mut size = 1usize << max_level;
        while size > node_max {
            size >>= 1;
        }
        size
    }

    /// What a request asks for, capped at the largest object.
    pub(super) fn want(&self, req: Request) -> usize {
        (1usize << req.level.min(31)).min(self.largest)
    }

    /// CPUs objects may be built from for `nr` requesters.
    fn supply(&self, nr: usize) -> usize {
        // Only CPUs some node holds can be placed: an online CPU outside
        // every node (--node-cpus a subset) is no supply (bench Fig. 6 got
        // 4, 4, 0 for three tasks on 8 of 10 CPUs).
        let online = self.grid.online_slots;
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
    pub(super) fn pairs(&self, nr: usize) -> usize {
        if self.largest < 2 {
            return 0;
        }
        (self.supply(nr) / 2).min(self.grid.aligned_pairs)
    }

    /// Does what `nr` requesters ask for fit the supply (each gets it)?
    fn fits(&self, nr: usize) -> bool {
        self.largest >= 2 && self.sum_want <= self.supply(nr)
    }

    /// Object sizes by the rules in the module comment, in `order`'s order;
    /// `fast`: who holds the pairs when requesters outnumber them.
    fn targets(&self, order: &[(i32, Request)], fast: Option<&BTreeSet<i32>>) -> Vec<usize> {
        if let Some(fast) = fast {
            return order.iter().map(|(pid, _)| if fast.contains(pid) { 2 } else { 0 }).collect();
        }
        let supply = self.supply(order.len());
        let want: Vec<usize> = order.iter().map(|&(_, r)| self.want(r)).collect();
        if self.largest < 2 {
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

    fn set_target(&mut self, pid: i32, target: usize, changed: &mut Vec<i32>) {
        if let Some(r) = self.requesters.get_mut(&pid) {
            if r.target != target {
                r.target = target;
                changed.push(pid);
            }
        }
    }

    /// Every requester's target from scratch (`chosen`: the pair holders a
    /// period's start chose). Returns those with a target of 2 or more, with
    /// it, in priority order, and the requesters whose target changed.
    pub(super) fn retarget_all(&mut self, chosen: Option<BTreeSet<i32>>) -> (Vec<(i32, usize)>, Vec<i32>) {
        // By priority, each with its index in pid order (the map's), so that
        // the targets go back without a lookup per requester.
        let mut rows: Vec<(Priority, Request, usize)> =
            self.requesters.iter().enumerate().map(|(i, (&pid, r))| (priority(pid, r), r.req, i)).collect();
        rows.sort_unstable_by_key(|row| row.0);
        let order: Vec<(i32, Request)> = rows.iter().map(|&((_, _, pid), req, _)| (pid, req)).collect();
        let n = self.pairs(order.len());
        let fast = (order.len() > n).then(|| chosen.unwrap_or_else(|| self.share.pick(n, &self.holders())));
        let targets = self.targets(&order, fast.as_ref());
        let mut by_pid = vec![0; rows.len()];
        for (row, &target) in rows.iter().zip(&targets) {
            by_pid[row.2] = target;
        }
        let mut changed = Vec::new();
        for ((&pid, r), target) in self.requesters.iter_mut().zip(by_pid) {
            if r.target != target {
                r.target = target;
                changed.push(pid);
            }
        }
        let placed = order.iter().zip(targets).filter(|&(_, t)| t >= 2).map(|(&(pid, _), t)| (pid, t)).collect();
        self.shape = if fast.is_some() {
            Shape::Fast
        } else if self.fits(order.len()) {
            Shape::Want
        } else {
            Shape::Other
        };
        (placed, changed)
    }

    /// The targets after an event that touched `dirty`, changing only those
    /// that differ from the last ones; the requesters whose target changed.
    /// Equal to `retarget_all`'s (the audit compares them).
    pub(super) fn retarget(&mut self, dirty: &BTreeSet<i32>, chosen: Option<BTreeSet<i32>>) -> Vec<i32> {
        let nr = self.requesters.len();
        let n = self.pairs(nr);
        let mut changed = Vec::new();
        if nr > n && self.shape == Shape::Fast {
            // Targets are 2 for the pair holders, 0 for the rest: those who
            // had 2 hold a pair or are short of one.
            let fast: BTreeSet<i32> = match chosen {
                Some(chosen) => chosen,
                None if self.share.period() == 0 => self.share.queue().take(n).collect(),
                None => {
                    let gone = dirty.iter().filter(|p| self.objects.contains_key(p) && !self.requesters.contains_key(p));
                    let holders = self.objects.len() - gone.count();
                    if holders > n {
                        self.share.pick(n, &self.holders())
                    } else {
                        // `pick` between period starts: the holders keep
                        // theirs, the pairs left go to the first waiters.
                        let fill: BTreeSet<i32> =
                            self.share.queue().filter(|p| !self.objects.contains_key(p)).take(n - holders).collect();
                        let unfilled: Vec<i32> = self.short.iter().copied().filter(|p| !fill.contains(p)).collect();
                        for pid in fill {
                            self.set_target(pid, 2, &mut changed);
                        }
                        for pid in unfilled {
                            self.set_target(pid, 0, &mut changed);
                        }
                        return changed;
                    }
                }
            };
            let had: Vec<i32> = self.objects.keys().chain(&self.short).copied().filter(|p| !fast.contains(p)).collect();
            for pid in fast {
                self.set_target(pid, 2, &mut changed);
            }
            for pid in had {
                self.set_target(pid, 0, &mut changed);
            }
            return changed;
        }
        if nr <= n && self.shape == Shape::Want && self.fits(nr) {
            // Everyone gets what they ask for: only a changed request changes.
            for &pid in dirty {
                if let Some(r) = self.requesters.get(&pid) {
                    let want = self.want(r.req);
                    self.set_target(pid, want, &mut changed);
                }
            }
            return changed;
        }
        self.retarget_all(chosen).1
    }
}
