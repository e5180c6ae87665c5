//! Random event sequences on random machines: the incremental node manager
//! decides what the full recompute decides, event after event, and both
//! decide what the node manager decided before it was incremental (the
//! digest of every decision, recorded then).

use crate::nodes::fast_share::Member;
use crate::nodes::node::Node;
use crate::nodes::node_manager::{Change, NodeManager, Request};
use super::Rng;
use std::collections::{BTreeMap, BTreeSet};

/// Draws for scenarios, from the node manager tests' generator.
trait Draw {
    fn under(&mut self, n: usize) -> usize;

    fn one_in(&mut self, n: usize) -> bool {
        self.under(n) == 0
    }

    fn pick<T: Copy>(&mut self, from: &[T]) -> T {
        from[self.under(from.len())]
    }
}

impl Draw for Rng {
    fn under(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }
}

#[derive(Debug, Clone)]
enum Event {
    Request(i32, Request, Member),
    Release(i32),
    Reconcile(Vec<i32>),
    Online(usize, bool),
    Allowed(i32, Option<BTreeSet<usize>>),
    Untagged(usize),
    Awake(i32, bool),
    Rotate,
    RotateWith(BTreeMap<u64, usize>),
    RotateAt(BTreeMap<i32, usize>),
    Nodes(Vec<Node>),
    Boost(usize),
    Rebalance,
}

/// A machine and what happens on it.
struct Scenario {
    nodes: Vec<Node>,
    online: Vec<usize>,
    max_level: u32,
    events: Vec<Event>,
}

/// Nodes over CPUs 0..cpus: random sizes, sometimes a CPU in no node, some
/// nodes in reverse slot order, sometimes of mixed capacities.
fn layout(rng: &mut Rng, cpus: usize, large: bool) -> Vec<Node> {
    let mut ids: Vec<usize> = (0..cpus).collect();
    if cpus > 3 && rng.one_in(4) {
        ids.retain(|_| !rng.one_in(8));
    }
    let hybrid = rng.one_in(3);
    let sizes: &[usize] = if large { &[32, 64, 96, 128, 160, 200] } else { &[1, 2, 2, 3, 4, 4, 6, 8, 8, 12, 16] };
    let mut nodes = Vec::new();
    let mut at = 0;
    while at < ids.len() {
        let n = rng.pick(sizes).min(ids.len() - at);
        let mut slots = ids[at..at + n].to_vec();
        if rng.one_in(5) {
            slots.reverse();
        }
        let cap = if hybrid { rng.pick(&[1024, 512, 768]) } else { 1024 };
        nodes.push(Node { id: nodes.len(), slots, cap });
        at += n;
    }
    nodes
}

/// A random scenario; `large` ones have nodes wider than 64 CPUs and
/// objects up to 256.
fn scenario(seed: u64, large: bool) -> Scenario {
    let mut rng = Rng(seed | 1);
    let cpus = if large { 64 + rng.under(300) } else { 2 + rng.under(40) };
    let pool = if large { 20 + rng.under(300) } else { 2 + rng.under(30) } as i32;
    let max_level = if large { 1 + rng.under(8) } else { 1 + rng.under(4) } as u32;
    let nodes = layout(&mut rng, cpus, large);
    // Sometimes CPUs outside every node are online, sometimes some are not.
    let online: Vec<usize> = (0..cpus + 2).filter(|&c| if c >= cpus { rng.one_in(2) } else { !rng.one_in(6) }).collect();
    let weights = [1, 1, 1, 2, 3, 10, 1000, u32::MAX];
    let mut live: Vec<i32> = Vec::new();
    let nr = if large { 60 + rng.under(120) } else { 50 + rng.under(250) };
    let mut events = Vec::with_capacity(nr);
    let some_pid = |rng: &mut Rng, live: &[i32]| {
        if !live.is_empty() && !rng.one_in(5) {
            live[rng.under(live.len())]
        } else {
            1 + rng.under(pool as usize) as i32
        }
    };
    // One in four spends its first half before the first period (the
    // static order of the pairs).
    let static_until = if rng.one_in(4) { nr / 2 } else { 0 };
    for i in 0..nr {
        let ev = match rng.under(100) {
            77..=91 if i < static_until => Event::Rebalance,
            0..=29 => {
                let pid = if rng.one_in(3) { some_pid(&mut rng, &live) } else { 1 + rng.under(pool as usize) as i32 };
                let req = Request { level: rng.under(if large { 9 } else { 5 }) as u32, weight: rng.pick(&weights) };
                let member = Member { high: rng.one_in(6), group: rng.under(4) as u64 };
                if !live.contains(&pid) {
                    live.push(pid);
                }
                Event::Request(pid, req, member)
            }
            30..=41 => {
                let pid = some_pid(&mut rng, &live);
                live.retain(|&p| p != pid);
                Event::Release(pid)
            }
            42..=44 => {
                let gone: Vec<i32> = live.iter().copied().filter(|_| rng.one_in(4)).collect();
                live.retain(|p| !gone.contains(p));
                Event::Reconcile(gone)
            }
            45..=54 => Event::Online(rng.under(cpus + 2), !rng.one_in(3)),
            55..=62 => {
                let pid = some_pid(&mut rng, &live);
                let set = (!rng.one_in(3)).then(|| {
                    let keep = 1 + rng.under(4);
                    (0..cpus + 1).filter(|_| rng.under(5) < keep).collect()
                });
                Event::Allowed(pid, set)
            }
            63..=68 => Event::Untagged(rng.under(cpus + 2)),
            69..=76 => Event::Awake(some_pid(&mut rng, &live), rng.one_in(2)),
            77..=82 => Event::Rotate,
            83..=85 => Event::RotateWith((0..4).map(|g| (g, rng.under(6))).filter(|&(_, n)| n < 3).collect()),
            86..=91 => Event::RotateAt(
                (0..1 + rng.under(live.len() + 1)).map(|_| (some_pid(&mut rng, &live), rng.under(cpus + 1))).collect(),
            ),
            92..=93 => Event::Nodes(layout(&mut rng, cpus, large)),
            94 => Event::Boost(rng.under(3)),
            _ => Event::Rebalance,
        };
        events.push(ev);
    }
    Scenario { nodes, online, max_level, events }
}

/// Apply one event; what changed.
fn apply(m: &mut NodeManager, ev: &Event) -> Vec<Change> {
    match ev {
        Event::Request(pid, req, member) => m.request_as(*pid, *req, *member),
        Event::Release(pid) => m.release(*pid),
        Event::Reconcile(gone) => m.reconcile(|p| !gone.contains(&p)),
        Event::Online(cpu, on) => m.set_online(*cpu, *on),
        Event::Allowed(pid, set) => m.set_allowed(*pid, set.clone()),
        Event::Untagged(n) => m.set_untagged_load(*n),
        Event::Awake(pid, awake) => {
            m.set_awake(*pid, *awake);
            Vec::new()
        }
        Event::Rotate => m.rotate(),
        Event::RotateWith(runnable) => m.rotate_with(|g| runnable.get(&g).copied()),
        Event::RotateAt(on) => m.rotate_at(|_| None, on.clone()),
        Event::Nodes(nodes) => m.set_nodes(nodes.clone()),
        Event::Boost(t) => {
            m.set_boost_threshold(*t);
            Vec::new()
        }
        Event::Rebalance => m.rebalance(),
    }
}

/// FNV-1a over what the manager decided.
struct Digest(u64);

impl Digest {
    fn add(&mut self, x: u64) {
        for b in x.to_le_bytes() {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x100_0000_01b3);
        }
    }

    /// The changes of one event, in their order, and the state after it.
    fn event(&mut self, changes: &[Change], m: &NodeManager) {
        self.add(changes.len() as u64);
        for c in changes {
            self.add(c.pid as u64);
            match &c.object {
                Some(o) => {
                    self.add(u64::from(o.gen));
                    o.cpus.iter().for_each(|&cpu| self.add(cpu as u64));
                }
                None => self.add(u64::MAX),
            }
        }
        self.add(m.objects().len() as u64);
        self.add(m.nr_defrag_moves);
    }
}

/// Scenarios run (every 20th a large one).
const SEQUENCES: u64 = 2000;

/// The digest of every decision over the scenarios, as the full recompute
/// (the node manager before it was incremental) makes them under today's
/// rules, and the number of events. A change of rule (where an object may
/// be) changes it: recorded again from the full recompute, which the loop
/// above holds the incremental one to event by event.
const DECIDED_BEFORE: (u64, usize) = (0xf65e_693c_0af5_0d0b, 344_198);

fn scenario_nr(i: u64) -> Scenario {
    scenario(0x5851_f42d_4c95_7f2d ^ i.wrapping_mul(0x9e37_79b9_7f4a_7c15), i % 20 == 19)
}

#[test]
fn the_incremental_rebalance_decides_as_the_full_recompute() {
    let mut digest = Digest(0xcbf2_9ce4_8422_2325);
    let mut events = 0;
    for i in 0..SEQUENCES {
        let s = scenario_nr(i);
        let mut incremental = NodeManager::new(s.nodes.clone(), s.online.iter().copied(), s.max_level);
        let mut full = incremental.clone();
        full.set_incremental(false);
        for (step, ev) in s.events.iter().enumerate() {
            let mine = apply(&mut incremental, ev);
            let theirs = apply(&mut full, ev);
            if let Some(d) = incremental.differs(&full, &mine, &theirs) {
                panic!("scenario {i}, event {step} {ev:?}: {d}");
            }
            if step % 16 == 0 {
                if let Err(e) = incremental.check() {
                    panic!("scenario {i}, event {step} {ev:?}: {e}");
                }
            }
            digest.event(&mine, &incremental);
            events += 1;
        }
    }
    assert_eq!((digest.0, events), DECIDED_BEFORE, "decisions differ from the node manager's before it was incremental");
}

#[test]
fn an_audit_finds_wrong_books_and_the_full_recompute_corrects_them() {
    let nodes = vec![Node { id: 0, slots: (0..8).collect(), cap: 1024 }];
    let mut m = NodeManager::new(nodes, 0..8, 3);
    for pid in 1..=6 {
        m.request(pid, Request { level: 1, weight: 1 });
    }
    m.rotate();
    let audit = m.audit();
    assert!(audit.changes.is_empty() && audit.mismatch.is_none(), "{audit:?}");
    // A holder's target lost: the incremental path would not see it.
    let holder = *m.objects().keys().next().unwrap();
    m.requesters.get_mut(&holder).unwrap().target = 0;
    let audit = m.audit();
    assert!(audit.mismatch.is_some_and(|d| d.contains("targets")));
    assert!(audit.changes.is_empty(), "the objects were right: {:?}", audit.changes);
    assert_eq!(m.check(), Ok(()));
    // A slot's holder forgotten by the grid.
    let p = m.places[&holder];
    m.grid.clear(p.node, p.start, p.size);
    assert!(m.audit().mismatch.is_some_and(|d| d.contains("grid")));
    assert_eq!(m.check(), Ok(()));
}
