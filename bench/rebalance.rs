//! Benchmark (not a test): decision time of one full rebalance of the node
//! manager on a simulated 256-CPU machine (8 nodes of 32) with 1,000
//! requesters of mixed levels and weights.
//!   bench/rebalance [ROUNDS]
use chameleon::node::Node;
use chameleon::node_manager::{NodeManager, Request};
use std::time::Instant;

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(200);
    let nodes: Vec<Node> = (0..8).map(|id| Node { id, slots: (id * 32..id * 32 + 32).collect(), cap: 1024 }).collect();
    let mut m = NodeManager::new(nodes, 0..256, 3);
    // Deterministic mix: levels 1..3, weights 1..10.
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for pid in 0..1000 {
        let r = next();
        m.request(pid, Request { level: 1 + (r % 3) as u32, weight: 1 + (r >> 8) as u32 % 10 });
    }
    // Each round: a task holding an object exits (its CPUs go to others),
    // then it comes back (others shrink). Both are timed full rebalances.
    let mut samples: Vec<(u64, usize)> = Vec::with_capacity(2 * rounds);
    for i in 0..rounds {
        let owners: Vec<i32> = m.objects().keys().copied().collect();
        let pid = owners[(next() % owners.len() as u64) as usize];
        let t = Instant::now();
        let changes = m.release(pid);
        samples.push((t.elapsed().as_nanos() as u64, changes.len()));
        let t = Instant::now();
        let changes = m.request(pid, Request { level: 1 + (i % 3) as u32, weight: 1 + (i % 10) as u32 });
        samples.push((t.elapsed().as_nanos() as u64, changes.len()));
    }
    let mut ns: Vec<u64> = samples.iter().map(|s| s.0).collect();
    ns.sort();
    let mut changes: Vec<usize> = samples.iter().map(|s| s.1).collect();
    changes.sort();
    let pct = |p: f64| ns[((p / 100.0 * ns.len() as f64).ceil() as usize).clamp(1, ns.len()) - 1];
    let objects = m.objects().len();
    let cpus: usize = m.objects().values().map(|o| o.cpus.len()).sum();
    println!(
        "rebalance, 256 CPUs in 8 nodes, 1000 requesters ({objects} objects on {cpus} CPUs), {} rebalances: \
         p50 {:.1} us, p99 {:.1} us, max {:.1} us; objects changed per rebalance p50 {} max {}",
        ns.len(),
        pct(50.0) as f64 / 1e3,
        pct(99.0) as f64 / 1e3,
        pct(100.0) as f64 / 1e3,
        changes[changes.len() / 2],
        changes[changes.len() - 1]
    );
}
