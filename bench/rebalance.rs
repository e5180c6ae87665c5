//! Benchmark (not a test): the node manager's decision time on simulated
//! machines with requesters of mixed levels and weights — 256 CPUs in 8
//! nodes of 32 with 1,000 requesters, and 1,024 CPUs in 32 nodes of 32 with
//! 4,000 — per event (one requester leaves or arrives), per full recompute
//! (`rebalance()`, from the same state), per accounting period's start
//! (`rotate()`), and per arrival before the first period.
//!   bench/rebalance [ROUNDS]
use chameleon::nodes::node::Node;
use chameleon::nodes::node_manager::{Change, NodeManager, Request};
use std::time::Instant;

/// The times of one kind of call, and how many objects each changed.
#[derive(Default)]
struct Series {
    ns: Vec<u64>,
    changed: Vec<usize>,
}

impl Series {
    fn time(&mut self, call: impl FnOnce() -> Vec<Change>) -> Vec<Change> {
        let t = Instant::now();
        let changes = call();
        self.ns.push(t.elapsed().as_nanos() as u64);
        self.changed.push(changes.len());
        changes
    }

    /// "what (n times): p50 .. us, p99 .. us, max .. us; objects changed p50 .. max .."
    fn line(&mut self, what: &str) -> String {
        let (ns, changed) = (&mut self.ns, &mut self.changed);
        ns.sort_unstable();
        changed.sort_unstable();
        let pct = |p: f64| ns[((p / 100.0 * ns.len() as f64).ceil() as usize).clamp(1, ns.len()) - 1] as f64 / 1e3;
        format!(
            "{what} ({} times): p50 {:.1} us, p99 {:.1} us, max {:.1} us; objects changed p50 {} max {}",
            ns.len(),
            pct(50.0),
            pct(99.0),
            pct(100.0),
            changed[changed.len() / 2],
            changed[changed.len() - 1]
        )
    }
}

fn run(nodes: usize, per_node: usize, requesters: i32, rounds: usize) {
    let cpus = nodes * per_node;
    let topo: Vec<Node> =
        (0..nodes).map(|id| Node { id, slots: (id * per_node..(id + 1) * per_node).collect(), cap: 1024 }).collect();
    let mut m = NodeManager::new(topo, 0..cpus, 3);
    let mut x: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    // Levels 1..3, weights 1..10. The second half arrives contended, before
    // the first accounting period (the pairs in the static order).
    let (mut arrivals, mut events, mut fulls, mut rotations) = Default::default();
    for pid in 0..requesters {
        let r = next();
        let req = Request { level: 1 + (r % 3) as u32, weight: 1 + (r >> 8) as u32 % 10 };
        if pid < requesters / 2 {
            m.request(pid, req);
        } else {
            Series::time(&mut arrivals, || m.request(pid, req));
        }
    }
    // The agent starts an accounting period every 30 ms while requesters
    // outnumber the pairs: this is the state it runs in.
    m.rotate();
    // Each round: a task holding an object exits (its CPUs go to another),
    // then it comes back (as a newcomer); both events are timed. Then the
    // full recompute from that state, and a period start (`rotate()`).
    for i in 0..rounds {
        let owners: Vec<i32> = m.objects().keys().copied().collect();
        let pid = owners[(next() % owners.len() as u64) as usize];
        Series::time(&mut events, || m.release(pid));
        let req = Request { level: 1 + (i % 3) as u32, weight: 1 + (i % 10) as u32 };
        Series::time(&mut events, || m.request(pid, req));
        let changes = Series::time(&mut fulls, || m.rebalance());
        assert!(changes.is_empty(), "the full recompute disagrees with the event's: {changes:?}");
        Series::time(&mut rotations, || m.rotate());
    }
    let objects = m.objects().len();
    let held: usize = m.objects().values().map(|o| o.cpus.len()).sum();
    println!("{cpus} CPUs in {nodes} nodes, {requesters} requesters ({objects} objects on {held} CPUs), {rounds} rounds:");
    println!("  {}", events.line("per event"));
    println!("  {}", fulls.line("full recompute"));
    println!("  {}", rotations.line("period start"));
    println!("  {}", arrivals.line("before the first period, per arrival"));
}

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(200);
    run(8, 32, 1000, rounds);
    run(32, 32, 4000, rounds);
}
