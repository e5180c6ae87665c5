//! Execution objects on the agent's side: which CPU sets may form an object
//! (the shapes) and a first-fit allocator that gives each tagged task one.
//! The node manager replaces the allocator; the shapes and the BPF interface
//! stay.

use std::collections::BTreeMap;

/// The CPU sets that may form an object of each level, in first-fit order.
/// Every object lists its representative (lowest id) first, and each
/// power-of-two prefix of it is itself an object (BPF's partial fuse takes one).
#[derive(Debug, Clone)]
pub struct Shapes {
    nr_cpus: usize,
    /// SMT sibling pairs (lower id first), if the machine has SMT.
    smt_pairs: Vec<(usize, usize)>,
}

impl Shapes {
    pub fn new(nr_cpus: usize, smt_pairs: Vec<(usize, usize)>) -> Self {
        Shapes { nr_cpus, smt_pairs }
    }

    /// Candidate objects of `level` (2^level CPUs).
    pub fn candidates(&self, level: u32) -> Vec<Vec<usize>> {
        let size = 1usize << level;
        if level == 1 && !self.smt_pairs.is_empty() {
            return self.smt_pairs.iter().map(|&(a, b)| vec![a, b]).collect();
        }
        (0..self.nr_cpus / size).map(|b| (b * size..(b + 1) * size).collect()).collect()
    }
}

/// One task's object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Object {
    pub cpus: Vec<usize>,
    /// Changes whenever the task's CPUs change, so BPF re-places its virtual threads.
    pub gen: u32,
}

/// First fit: a requester gets the first candidate of its level whose CPUs are
/// all online and free, else of the next smaller level, else nothing (it runs
/// natively until CPUs free up).
#[derive(Debug)]
pub struct FirstFit {
    shapes: Shapes,
    online: Vec<bool>,
    owner: Vec<Option<i32>>,
    objects: BTreeMap<i32, Object>,
    /// Requesters waiting for CPUs: pid -> requested level.
    waiting: BTreeMap<i32, u32>,
    requested: BTreeMap<i32, u32>,
    next_gen: u32,
}

impl FirstFit {
    pub fn new(shapes: Shapes, online: Vec<bool>) -> Self {
        let n = shapes.nr_cpus;
        FirstFit {
            shapes,
            online,
            owner: vec![None; n],
            objects: BTreeMap::new(),
            waiting: BTreeMap::new(),
            requested: BTreeMap::new(),
            next_gen: 1,
        }
    }

    pub fn object(&self, pid: i32) -> Option<&Object> {
        self.objects.get(&pid)
    }

    pub fn objects(&self) -> impl Iterator<Item = (&i32, &Object)> {
        self.objects.iter()
    }

    fn free(&self, cpus: &[usize]) -> bool {
        cpus.iter().all(|&c| self.online.get(c) == Some(&true) && self.owner[c].is_none())
    }

    fn place(&mut self, pid: i32, level: u32) -> Option<Object> {
        for l in (1..=level).rev() {
            if let Some(cpus) = self.shapes.candidates(l).into_iter().find(|c| self.free(c)) {
                for &c in &cpus {
                    self.owner[c] = Some(pid);
                }
                let obj = Object { cpus, gen: self.next_gen };
                self.next_gen = self.next_gen.wrapping_add(1).max(1);
                self.objects.insert(pid, obj.clone());
                return Some(obj);
            }
        }
        None
    }

    /// A tagged task wants an object of `level`. Returns what it got, if anything.
    pub fn request(&mut self, pid: i32, level: u32) -> Option<Object> {
        if let Some(obj) = self.objects.get(&pid) {
            return Some(obj.clone());
        }
        self.requested.insert(pid, level);
        let got = self.place(pid, level);
        if got.is_none() {
            self.waiting.insert(pid, level);
        }
        got
    }

    fn release_cpus(&mut self, pid: i32) -> bool {
        let Some(obj) = self.objects.remove(&pid) else { return false };
        for c in obj.cpus {
            self.owner[c] = None;
        }
        true
    }

    /// Give waiting requesters what is free now; returns the new assignments.
    fn serve_waiting(&mut self) -> Vec<(i32, Object)> {
        let waiting: Vec<(i32, u32)> = self.waiting.iter().map(|(&p, &l)| (p, l)).collect();
        let mut out = Vec::new();
        for (pid, level) in waiting {
            if let Some(obj) = self.place(pid, level) {
                self.waiting.remove(&pid);
                out.push((pid, obj));
            }
        }
        out
    }

    /// The task left (or lost its tag). Returns objects given to waiters as a result.
    pub fn release(&mut self, pid: i32) -> Vec<(i32, Object)> {
        self.waiting.remove(&pid);
        self.requested.remove(&pid);
        if self.release_cpus(pid) {
            self.serve_waiting()
        } else {
            Vec::new()
        }
    }

    /// A CPU went offline: every object on it is withdrawn and its owner asks
    /// again. Returns (revoked pids, new assignments).
    pub fn cpu_offline(&mut self, cpu: usize) -> (Vec<i32>, Vec<(i32, Object)>) {
        if cpu >= self.online.len() {
            return (Vec::new(), Vec::new());
        }
        self.online[cpu] = false;
        let Some(pid) = self.owner[cpu] else { return (Vec::new(), Vec::new()) };
        self.release_cpus(pid);
        let level = self.requested.get(&pid).copied().unwrap_or(1);
        self.waiting.insert(pid, level);
        (vec![pid], self.serve_waiting())
    }

    /// A CPU came online: waiters may fit now.
    pub fn cpu_online(&mut self, cpu: usize) -> Vec<(i32, Object)> {
        if cpu < self.online.len() {
            self.online[cpu] = true;
        }
        self.serve_waiting()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm() -> FirstFit {
        // The test VM: 4 CPUs, SMT pairs (0,1) and (2,3).
        FirstFit::new(Shapes::new(4, vec![(0, 1), (2, 3)]), vec![true; 4])
    }

    #[test]
    fn shapes_follow_smt_then_aligned_blocks() {
        let s = Shapes::new(8, vec![(0, 4), (1, 5), (2, 6), (3, 7)]);
        assert_eq!(s.candidates(1), vec![vec![0, 4], vec![1, 5], vec![2, 6], vec![3, 7]]);
        assert_eq!(s.candidates(2), vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
        let no_smt = Shapes::new(4, vec![]);
        assert_eq!(no_smt.candidates(1), vec![vec![0, 1], vec![2, 3]]);
    }

    #[test]
    fn first_fit_then_smaller_then_wait() {
        let mut ff = vm();
        assert_eq!(ff.request(10, 1).unwrap().cpus, vec![0, 1]);
        // Level 2 no longer fits whole: falls back to the free SMT pair.
        assert_eq!(ff.request(11, 2).unwrap().cpus, vec![2, 3]);
        assert!(ff.request(12, 1).is_none());
        // 10 exits: the waiter gets its CPUs.
        let given = ff.release(10);
        assert_eq!(given.len(), 1);
        assert_eq!(given[0].0, 12);
        assert_eq!(given[0].1.cpus, vec![0, 1]);
    }

    #[test]
    fn offline_cpu_revokes_and_reassigns() {
        let mut ff = vm();
        let first = ff.request(10, 1).unwrap();
        let (revoked, given) = ff.cpu_offline(1);
        assert_eq!(revoked, vec![10]);
        assert_eq!(given[0].1.cpus, vec![2, 3]);
        assert_ne!(given[0].1.gen, first.gen, "a new object has a new generation");
        assert!(ff.cpu_online(1).is_empty());
    }

    #[test]
    fn repeated_request_is_idempotent() {
        let mut ff = vm();
        let a = ff.request(10, 1).unwrap();
        assert_eq!(ff.request(10, 1).unwrap(), a);
        assert!(ff.release(99).is_empty());
    }
}
