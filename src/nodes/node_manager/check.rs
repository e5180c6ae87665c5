//! The full recompute as a check of the incremental one: the books the
//! incremental path keeps (grid, sum of wants, who is short, the fast
//! queue) must be what the state says, and from any state
//! both must decide the same. The agent audits every so often; builds with
//! debug assertions (the host tests') check every event.

use super::{Change, NodeManager};
use std::collections::BTreeSet;

/// What `audit` found.
#[derive(Debug)]
pub struct Audit {
    /// The full recompute's changes (to publish, as a rebalance's).
    pub changes: Vec<Change>,
    /// How the incremental path's books or decision differed (None: not).
    pub mismatch: Option<String>,
}

impl NodeManager {
    /// Check the incremental path against the full recompute from the
    /// current state (`check`), then recompute everything: if the books
    /// were wrong, the full recompute's decision replaces theirs.
    pub fn audit(&mut self) -> Audit {
        let mismatch = self.check().err();
        let changes = self.place_full(None);
        Audit { changes, mismatch }
    }

    /// Are the books what the state says, and does the incremental path
    /// decide what the full recompute does from here? (Neither is changed.)
    pub fn check(&self) -> Result<(), String> {
        self.books()?;
        let (mut full, mut incremental) = (self.clone(), self.clone());
        let theirs = full.place_full(None);
        let mine = incremental.place_incremental(BTreeSet::new(), None);
        match incremental.differs(&full, &mine, &theirs) {
            Some(d) => Err(d),
            None => Ok(()),
        }
    }

    /// The books against the state they summarise.
    fn books(&self) -> Result<(), String> {
        let mut grid = super::Grid::new(&self.nodes, &self.online);
        for (&pid, p) in &self.places {
            grid.take(p.node, p.start, p.size, pid);
        }
        if grid != self.grid {
            return Err("the grid is not the places".into());
        }
        let sum_want: usize = self.requesters.values().map(|r| self.want(r.req)).sum();
        if sum_want != self.sum_want {
            return Err(format!("sum of wants {} against {sum_want}", self.sum_want));
        }
        let short: BTreeSet<i32> = (self.requesters.iter())
            .filter(|(p, r)| r.target >= 2 && self.places.get(p).map_or(0, |p| p.size) < r.target)
            .map(|(&p, _)| p)
            .collect();
        if short != self.short {
            return Err(format!("short {:?} against {short:?}", self.short));
        }
        for (pid, p) in &self.places {
            if self.objects.get(pid).map(|o| &o.cpus) != Some(&self.cpus_of(p)) {
                return Err(format!("pid {pid}: place {p:?}, object {:?}", self.objects.get(pid)));
            }
        }
        if self.objects.len() != self.places.len() {
            return Err("objects without a place".into());
        }
        self.share.check()
    }

    /// How this manager, having decided `mine`, differs from `other`, having
    /// decided `theirs` (None: in nothing).
    pub(super) fn differs(&self, other: &Self, mine: &[Change], theirs: &[Change]) -> Option<String> {
        if mine != theirs {
            return Some(format!("changes {mine:?} against {theirs:?}"));
        }
        if self.objects != other.objects || self.places != other.places {
            return Some(format!("objects {:?} against {:?}", self.places, other.places));
        }
        let targets = |m: &Self| m.requesters.iter().map(|(&p, r)| (p, r.target)).collect::<Vec<_>>();
        if targets(self) != targets(other) {
            return Some(format!("targets {:?} against {:?}", targets(self), targets(other)));
        }
        if (self.nr_defrag_moves, self.next_gen, self.shape) != (other.nr_defrag_moves, other.next_gen, other.shape) {
            return Some(format!(
                "defrag moves, next generation, shape: {:?} against {:?}",
                (self.nr_defrag_moves, self.next_gen, self.shape),
                (other.nr_defrag_moves, other.next_gen, other.shape)
            ));
        }
        if self.short != other.short {
            return Some(format!("short {:?} against {:?}", self.short, other.short));
        }
        if self.grid != other.grid {
            return Some(format!("grid {:?} against {:?}", self.grid, other.grid));
        }
        None
    }

    /// Debug builds: the event just decided incrementally (`changes`) against
    /// the full recompute from the state before it (`reference`).
    #[cfg(debug_assertions)]
    pub(super) fn verify(&self, reference: (Self, Option<BTreeSet<i32>>), changes: &[Change]) {
        let (mut full, chosen) = reference;
        let theirs = full.place_full(chosen);
        if let Some(d) = self.differs(&full, changes, &theirs) {
            panic!("node manager: the incremental rebalance differs from the full recompute: {d}");
        }
        if let Err(e) = self.books() {
            panic!("node manager: the books are wrong after an incremental rebalance: {e}");
        }
    }
}
