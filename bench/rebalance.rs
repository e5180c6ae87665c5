//! Benchmark (not a test): the node manager's decision time on simulated
//! machines with requesters of mixed levels and weights — 256 CPUs in 8
//! nodes of 32 with 1,000 requesters, and 1,024 CPUs in 32 nodes of 32 with
//! 4,000 — per event (one requester leaves or arrives), per full recompute
//! (`rebalance()`, from the same state), per accounting period's start
//! (`rotate()`), and per arrival before the first period.
//!   bench/rebalance [ROUNDS]
use chameleon::node::Node;
use chameleon::node_manager::{NodeManager, Request};
use std::time::Instant;

/// Deterministic pseudo-random numbers (xorshift64).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// Sorted samples in ns: "p50 .. us, p99 .. us, max .. us".
fn summary(ns: &mut [u64]) -> String {
    ns.sort_unstable();
    let pct = |p: f64| ns[((p / 100.0 * ns.len() as f64).ceil() as usize).clamp(1, ns.len()) - 1] as f64 / 1e3;
    format!("p50 {:.1} us, p99 {:.1} us, max {:.1} us", pct(50.0), pct(99.0), pct(100.0))
}

fn run(nodes: usize, per_node: usize, requesters: i32, rounds: usize) {
    let cpus = nodes * per_node;
    let topo: Vec<Node> =
        (0..nodes).map(|id| Node { id, slots: (id * per_node..(id + 1) * per_node).collect(), cap: 1024 }).collect();
    let mut m = NodeManager::new(topo, 0..cpus, 3);
    // Levels 1..3, weights 1..10. The second half arrives contended, before
    // the first accounting period (the pairs in the static order).
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let mut arrivals = Vec::new();
    for pid in 0..requesters {
        let r = rng.next();
        let t = Instant::now();
        m.request(pid, Request { level: 1 + (r % 3) as u32, weight: 1 + (r >> 8) as u32 % 10 });
        if pid >= requesters / 2 {
            arrivals.push(t.elapsed().as_nanos() as u64);
        }
    }
    // The agent starts an accounting period every 30 ms while requesters
    // outnumber the pairs: this is the state it runs in.
    m.rotate();
    // Each round: a task holding an object exits (its CPUs go to another),
    // then it comes back (as a newcomer); both events are timed. Then the
    // full recompute from that state, and a period start (`rotate()`).
    let (mut events, mut fulls, mut rotations, mut changed, mut rotated) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for i in 0..rounds {
        let owners: Vec<i32> = m.objects().keys().copied().collect();
        let pid = owners[(rng.next() % owners.len() as u64) as usize];
        let t = Instant::now();
        let changes = m.release(pid);
        events.push(t.elapsed().as_nanos() as u64);
        changed.push(changes.len());
        let t = Instant::now();
        let changes = m.request(pid, Request { level: 1 + (i % 3) as u32, weight: 1 + (i % 10) as u32 });
        events.push(t.elapsed().as_nanos() as u64);
        changed.push(changes.len());
        let t = Instant::now();
        let changes = m.rebalance();
        fulls.push(t.elapsed().as_nanos() as u64);
        assert!(changes.is_empty(), "the full recompute disagrees with the event's: {changes:?}");
        let t = Instant::now();
        let changes = m.rotate();
        rotations.push(t.elapsed().as_nanos() as u64);
        rotated.push(changes.len());
    }
    changed.sort_unstable();
    rotated.sort_unstable();
    let objects = m.objects().len();
    let held: usize = m.objects().values().map(|o| o.cpus.len()).sum();
    println!(
        "{cpus} CPUs in {nodes} nodes, {requesters} requesters ({objects} objects on {held} CPUs), {rounds} rounds:\n  \
         per event ({} events): {}; objects changed per event p50 {} max {}\n  \
         full recompute ({} times): {}\n  \
         period start ({} times): {}; objects changed p50 {} max {}\n  \
         before the first period, per arrival ({} events): {}",
        events.len(),
        summary(&mut events),
        changed[changed.len() / 2],
        changed[changed.len() - 1],
        fulls.len(),
        summary(&mut fulls),
        rotations.len(),
        summary(&mut rotations),
        rotated[rotated.len() / 2],
        rotated[rotated.len() - 1],
        arrivals.len(),
        summary(&mut arrivals),
    );
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(200);
    run(8, 32, 1000, rounds);
    run(32, 32, 4000, rounds);
}
