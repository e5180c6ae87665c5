//! The agent's numbers — the policy's counters and the companion module's —
//! served with scx_stats on its usual socket (/var/run/scx/root/stats,
//! request "stats"), read back by `scx_chameleon --monitor N`, `status` and
//! `top`, and rendered as OpenMetrics text by `scx_chameleon metrics`. This
//! is their only way out: the status (status.rs) carries the view, not them.

use crate::report::stats::Totals;
use scx_stats::prelude::*;
use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Stats)]
#[stat(top)]
pub struct Metrics {
    #[stat(desc = "objects fused whole")]
    pub fuse: u64,
    #[stat(desc = "objects fused partially (a smaller prefix)")]
    pub partial_fuse: u64,
    #[stat(desc = "objects split")]
    pub split: u64,
    #[stat(desc = "fuse attempts that found no CPU to borrow")]
    pub fuse_denied: u64,
    #[stat(desc = "per-CPU kthreads run on lent CPUs (proxy service)")]
    pub proxy_served: u64,
    #[stat(desc = "tasks queued on a vtime queue")]
    pub enqueued: u64,
    #[stat(desc = "tasks taken from another CPU's queue")]
    pub stolen: u64,
    #[stat(desc = "tasks sent straight to an idle CPU's local queue")]
    #[serde(default)]
    pub direct: u64,
    #[stat(desc = "tasks a CPU took from its own queue")]
    #[serde(default)]
    pub dispatched: u64,
    #[stat(desc = "idle CPUs woken for new work")]
    #[serde(default)]
    pub kicks: u64,
    #[stat(desc = "fused owners a bound higher-class kthread preempted (injected idle, the stopper), object kept")]
    #[serde(default)]
    pub kthread_keeps: u64,
    #[stat(desc = "waking tasks that took their CPU from a running task owed less")]
    #[serde(default)]
    pub wake_preempts: u64,
    #[stat(desc = "hybrid: tasks sent from a slow CPU to an idle fast one")]
    #[serde(default)]
    pub fast_moves: u64,
    #[stat(desc = "tasks queued on their LLC's shared queue")]
    #[serde(default)]
    pub llc_queued: u64,
    #[stat(desc = "tasks a CPU took from an LLC queue")]
    #[serde(default)]
    pub llc_taken: u64,
    #[stat(desc = "of which from another LLC's queue")]
    #[serde(default)]
    pub llc_far: u64,
    #[stat(desc = "milliseconds tasks ran under the scheduler")]
    pub busy_ms: u64,
    #[stat(desc = "events lost because the ring buffer was full")]
    pub events_dropped: u64,
    #[stat(desc = "of which DEMAND events (a task asking for an object; it asks again)")]
    #[serde(default)]
    pub demand_dropped: u64,
    #[stat(desc = "broken invariant: a CPU lent to a representative that holds no object (a policy bug)")]
    #[serde(default)]
    pub invariant_lent_to_non_rep: u64,
    #[stat(desc = "broken invariant: an object whose owner was away past three guard periods and stayed fused (a policy bug)")]
    #[serde(default)]
    pub invariant_owner_gone: u64,
    #[stat(desc = "broken invariant: a task waited past the wait bound on a CPU whose role forbids it (a policy bug)")]
    #[serde(default)]
    pub invariant_queue_forbidden: u64,
    #[stat(desc = "1 if the chameleon_proxy module is loaded")]
    pub proxy_module_loaded: u64,
    #[stat(desc = "1 if the policy calls the module's kfuncs (loaded before the scheduler)")]
    pub proxy_kfuncs_bound: u64,
    #[stat(desc = "CPUs lent to a representative now (processor proxies)")]
    pub proxy_lent_cpus: u64,
    #[stat(desc = "CPUs lent through the module")]
    pub proxy_lends: u64,
    #[stat(desc = "lent CPUs given back through the module")]
    pub proxy_reclaims: u64,
    #[stat(desc = "device IRQs moved off lent or parked CPUs now")]
    pub proxy_irqs_moved: u64,
    #[stat(desc = "device interrupts lent CPUs still took while lent")]
    pub proxy_lent_irqs: u64,
    #[stat(desc = "softirqs lent CPUs still ran while lent")]
    pub proxy_lent_softirqs: u64,
    #[stat(desc = "IPIs (function call, reschedule, TLB) lent CPUs still took while lent")]
    pub proxy_lent_ipis: u64,
    #[stat(desc = "local timer interrupts lent CPUs still took while lent")]
    pub proxy_lent_timers: u64,
    #[stat(desc = "kernel-managed IRQs the module left on lent or parked CPUs")]
    #[serde(default)]
    pub proxy_managed_skipped: u64,
    #[stat(desc = "the last park's synchronous part (CPUs out of use), ns")]
    #[serde(default)]
    pub proxy_park_critical_ns: u64,
    #[stat(desc = "the last park, from the call to its last CPU offline, ns")]
    #[serde(default)]
    pub proxy_park_physical_ns: u64,
    #[stat(desc = "the last unpark's synchronous part, ns")]
    #[serde(default)]
    pub proxy_unpark_critical_ns: u64,
    #[stat(desc = "the last unpark, from the call to its last CPU online, ns")]
    #[serde(default)]
    pub proxy_unpark_physical_ns: u64,
    #[stat(desc = "DEMANDs refused: the agent held its most pidfds or had no file descriptor (the task runs without an object until it asks again)")]
    #[serde(default)]
    pub requesters_refused: u64,
    #[stat(desc = "DEMANDs whose pid named another task when the agent looked (the task that asked had exited)")]
    #[serde(default)]
    pub demand_pid_reused: u64,
    #[stat(desc = "tax=auto tasks measured without an instruction counter: the agent held its most perf counters")]
    #[serde(default)]
    pub auto_tax_no_counter: u64,
    #[stat(desc = "pidfds the agent holds now, one per requester")]
    #[serde(default)]
    pub pidfds_held: u64,
    #[stat(desc = "times the control socket's acceptor waited for lack of file descriptors or memory (EMFILE, ENFILE, ENOBUFS, ENOMEM)")]
    #[serde(default)]
    pub control_accept_backoffs: u64,
    #[stat(desc = "the agent's --run-id (0: none given)")]
    pub run_id: u64,
    /// Read from the kernel when a client asks (kernel_events.rs), so they
    /// are as fresh as the file; absent on kernels without it.
    #[stat(desc = "the kernel's sched_ext event counters for this scheduler (bypass_duration in ns)")]
    #[serde(default)]
    pub kernel_events: BTreeMap<String, u64>,
    /// The NRI plugin's tag requests the agent refused, by reason
    /// (tags/request.rs Reason): the container runs untagged.
    #[stat(desc = "tag requests of the NRI plugin refused, by reason (level, weight, tax, smt, prio, unknown_key, cgroup)")]
    #[serde(default)]
    pub nri_rejected: BTreeMap<String, u64>,
    /// The loop's lateness (lateness.rs): how late each tick and rotation
    /// ran after it was due. Per bucket, keyed by its upper bound in µs
    /// ("inf" for the open one), not cumulative; exported as one
    /// OpenMetrics histogram with the sum below.
    #[stat(desc = "ticks and rotations of the agent's loop by how late they ran, per bucket (upper bound in us; not cumulative)")]
    #[serde(default)]
    pub loop_late_us: BTreeMap<String, u64>,
    #[stat(desc = "sum of the loop's lateness, us")]
    #[serde(default)]
    pub loop_late_sum_us: u64,
    #[stat(desc = "the loop's lateness: 99th percentile since the start (bucket bound), us")]
    #[serde(default)]
    pub loop_late_p99_us: u64,
    #[stat(desc = "the loop's lateness: the largest since the start, us")]
    #[serde(default)]
    pub loop_late_max_us: u64,
    /// When the agent read the counters above (it does once a second), so a
    /// reader polling at another pace takes rates over the agent's period,
    /// not its own (at 0.5 s it would see 0 and twice the rate in turn).
    #[stat(desc = "when the counters were read: CLOCK_MONOTONIC in ms (0: not yet)")]
    #[serde(default)]
    pub sampled_ms: u64,
}

/// Fields that describe the sample, not the machine: not exported.
const NOT_EXPORTED: &[&str] = &["sampled_ms", "loop_late_sum_us"];

/// Fields exported as one OpenMetrics histogram (with NOT_EXPORTED's
/// `loop_late_sum_us` as its sum).
const HISTOGRAMS: &[&str] = &["loop_late_us"];

/// Fields that are a level now, not a running count (OpenMetrics gauges).
const GAUGES: &[&str] = &[
    "run_id",
    "pidfds_held",
    "proxy_module_loaded",
    "proxy_kfuncs_bound",
    "proxy_lent_cpus",
    "proxy_irqs_moved",
    "proxy_park_critical_ns",
    "proxy_park_physical_ns",
    "proxy_unpark_critical_ns",
    "proxy_unpark_physical_ns",
    "loop_late_p99_us",
    "loop_late_max_us",
];

/// Fields that are a set of counters of one family, told apart by a label
/// (field, label name): one TYPE line, one sample per key.
const LABELLED: &[(&str, &str)] = &[("kernel_events", "event"), ("nri_rejected", "reason")];

/// The agent's limits at work (agent/fd_budget.rs): what they refused or
/// waited for since the start, and the pidfds held now.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub requesters_refused: u64,
    pub demand_pid_reused: u64,
    pub auto_tax_no_counter: u64,
    pub pidfds_held: u64,
    pub control_accept_backoffs: u64,
}

/// CLOCK_MONOTONIC in ms: system-wide, so an agent and a reader agree on it.
pub fn monotonic_ms() -> u64 {
    clock_ns(nix::time::ClockId::CLOCK_MONOTONIC) / 1_000_000
}

/// `clock` now, in ns (0 if it cannot be read: it always can, for the
/// clocks we ask).
pub fn clock_ns(clock: nix::time::ClockId) -> u64 {
    nix::time::clock_gettime(clock).map_or(0, |t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
}

impl Metrics {
    pub fn from_totals(t: &Totals, events_dropped: u64) -> Metrics {
        Metrics {
            fuse: t.fuse,
            partial_fuse: t.partial,
            split: t.split,
            fuse_denied: t.fuse_denied,
            proxy_served: t.proxy_served,
            enqueued: t.enqueued,
            stolen: t.stolen,
            direct: t.direct,
            dispatched: t.dispatched,
            kicks: t.kicks,
            kthread_keeps: t.kthread_keeps,
            wake_preempts: t.wake_preempts,
            fast_moves: t.fast_moves,
            llc_queued: t.llc_queued,
            llc_taken: t.llc_taken,
            llc_far: t.llc_far,
            busy_ms: t.busy_ns / 1_000_000,
            events_dropped,
            ..Default::default()
        }
    }

    /// The policy's counters back as `Totals`, for its one printed form
    /// (`counters: enq=… fuse=…`); busy time to the millisecond, as served.
    pub fn totals(&self) -> Totals {
        Totals {
            enqueued: self.enqueued,
            direct: self.direct,
            dispatched: self.dispatched,
            stolen: self.stolen,
            kicks: self.kicks,
            busy_ns: self.busy_ms * 1_000_000,
            fuse: self.fuse,
            partial: self.partial_fuse,
            fuse_denied: self.fuse_denied,
            split: self.split,
            proxy_served: self.proxy_served,
            kthread_keeps: self.kthread_keeps,
            wake_preempts: self.wake_preempts,
            fast_moves: self.fast_moves,
            llc_queued: self.llc_queued,
            llc_taken: self.llc_taken,
            llc_far: self.llc_far,
        }
    }

    /// The policy's broken-invariant counters (intf.h: lent_to_non_rep,
    /// owner_gone, queue_forbidden) and DEMAND losses.
    pub fn with_invariants(mut self, [lent, owner, queue]: [u64; 3], demand_dropped: u64) -> Metrics {
        self.invariant_lent_to_non_rep = lent;
        self.invariant_owner_gone = owner;
        self.invariant_queue_forbidden = queue;
        self.demand_dropped = demand_dropped;
        self
    }

    /// The companion module's numbers from one STATS read: its processor
    /// proxies, the interruptions lent CPUs still took, the last park's
    /// latencies (None: not loaded, or not read yet).
    pub fn with_module(mut self, m: Option<&crate::report::module_read::ModuleRead>) -> Metrics {
        if let Some(m) = m {
            let c = &m.counters;
            self.proxy_module_loaded = 1;
            self.proxy_kfuncs_bound = u64::from(m.state.kfuncs);
            self.proxy_lent_cpus = m.state.proxies.len() as u64;
            self.proxy_lends = c.lends;
            self.proxy_reclaims = c.reclaims;
            self.proxy_irqs_moved = u64::from(c.irqs_moved);
            self.proxy_lent_irqs = c.lent_irqs;
            self.proxy_lent_softirqs = c.lent_softirqs;
            self.proxy_lent_ipis = c.lent_ipis;
            self.proxy_lent_timers = c.lent_timers;
            self.proxy_managed_skipped = c.managed_skipped;
            self.proxy_park_critical_ns = c.park_critical_ns;
            self.proxy_park_physical_ns = c.park_physical_ns;
            self.proxy_unpark_critical_ns = c.unpark_critical_ns;
            self.proxy_unpark_physical_ns = c.unpark_physical_ns;
        }
        self
    }

    /// The loop's lateness histogram (lateness.rs).
    pub fn with_lateness(mut self, l: &crate::report::lateness::Lateness) -> Metrics {
        self.loop_late_us = l
            .counts
            .iter()
            .enumerate()
            .map(|(i, &c)| (crate::report::lateness::BOUNDS_US.get(i).map_or("inf".to_string(), |b| b.to_string()), c))
            .collect();
        self.loop_late_sum_us = l.sum_us;
        self.loop_late_p99_us = l.quantile_us(0.99).unwrap_or(0);
        self.loop_late_max_us = l.max_us;
        self
    }

    /// The histogram back from its exported form (a reader's side).
    pub fn lateness(&self) -> crate::report::lateness::Lateness {
        let bounds = crate::report::lateness::BOUNDS_US;
        let mut counts = vec![0; bounds.len() + 1];
        for (k, &c) in &self.loop_late_us {
            let i = k.parse::<u64>().ok().and_then(|b| bounds.iter().position(|&x| x == b)).unwrap_or(bounds.len());
            counts[i] += c;
        }
        crate::report::lateness::Lateness { counts, sum_us: self.loop_late_sum_us, max_us: self.loop_late_max_us }
    }

    /// The agent's limits (Limits).
    pub fn with_limits(mut self, l: Limits) -> Metrics {
        self.requesters_refused = l.requesters_refused;
        self.demand_pid_reused = l.demand_pid_reused;
        self.auto_tax_no_counter = l.auto_tax_no_counter;
        self.pidfds_held = l.pidfds_held;
        self.control_accept_backoffs = l.control_accept_backoffs;
        self
    }

    pub fn with_run_id(mut self, run_id: Option<u64>) -> Metrics {
        self.run_id = run_id.unwrap_or(0);
        self
    }

    /// OpenMetrics text exposition (prometheus-client's encoder): monotonic
    /// counters (`_total`), the few gauges in GAUGES, and each LABELLED
    /// field as one counter family with a sample per key.
    pub fn openmetrics(&self) -> String {
        use prometheus_client::encoding::text::encode;
        use prometheus_client::metrics::{counter::Counter, family::Family, gauge::Gauge};
        use prometheus_client::registry::Registry;
        use std::sync::atomic::AtomicU64;

        let v = serde_json::to_value(self).expect("plain counters serialize");
        let meta = Metrics::meta();
        let mut registry = Registry::with_prefix("chameleon");
        for (name, field) in &meta.fields {
            if NOT_EXPORTED.contains(&name.as_str()) {
                continue;
            }
            let desc = field.attrs.desc.clone().unwrap_or_default();
            if HISTOGRAMS.contains(&name.as_str()) {
                registry.register_with_unit(name.trim_end_matches("_us"), desc, prometheus_client::registry::Unit::Seconds, LateHistogram(self.lateness()));
                continue;
            }
            if let Some((_, label)) = LABELLED.iter().find(|(f, _)| f == name) {
                let family = Family::<Vec<(String, String)>, Counter<u64, AtomicU64>>::default();
                for (key, value) in v.get(name).and_then(|x| x.as_object()).into_iter().flatten() {
                    family.get_or_create(&vec![(label.to_string(), key.clone())]).inc_by(value.as_u64().unwrap_or(0));
                }
                registry.register(name.as_str(), desc, family);
                continue;
            }
            let value = v.get(name).and_then(|x| x.as_u64()).unwrap_or(0);
            if GAUGES.contains(&name.as_str()) {
                let g = Gauge::<u64, AtomicU64>::default();
                g.set(value);
                registry.register(name.as_str(), desc, g);
            } else {
                let c = Counter::<u64, AtomicU64>::default();
                c.inc_by(value);
                registry.register(name.as_str(), desc, c);
            }
        }
        let mut out = String::new();
        encode(&mut out, &registry).expect("writing to a String cannot fail");
        out
    }
}

/// A histogram already counted (lateness.rs), encoded as OpenMetrics'
/// histogram type: prometheus-client's own Histogram only counts what it
/// observes itself.
#[derive(Debug)]
struct LateHistogram(crate::report::lateness::Lateness);

impl prometheus_client::encoding::EncodeMetric for LateHistogram {
    fn encode(&self, mut encoder: prometheus_client::encoding::MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_histogram::<prometheus_client::encoding::NoLabelSet>(
            self.0.sum_us as f64 / 1e6,
            self.0.count(),
            &self.0.buckets_s(),
            None,
        )
    }

    fn metric_type(&self) -> prometheus_client::metrics::MetricType {
        prometheus_client::metrics::MetricType::Histogram
    }
}

/// `--help-stats`: every statistic and what it means (scx_stats' own format).
pub fn describe(w: &mut impl std::io::Write) -> anyhow::Result<()> {
    StatsServerData::<(), ()>::new().add_meta(Metrics::meta()).describe_meta(w, None)
}

/// Serve `latest` on the scx_stats socket until the process exits, with the
/// kernel's event counters read at each request (a reader comparing them
/// with the kernel file sees the same instant, not the last second's).
pub fn serve(latest: Arc<Mutex<Metrics>>) -> anyhow::Result<StatsServer<(), ()>> {
    // One warning per agent run: a client polling every second must not
    // fill the log with the same complaint.
    let warned = AtomicBool::new(false);
    let data = StatsServerData::<(), ()>::new().add_meta(Metrics::meta()).add_stats(
        "top",
        Box::new(move |_args, _chan| {
            let mut m = latest.lock().unwrap().clone();
            match crate::report::kernel_events::read(std::path::Path::new(crate::report::kernel_events::PATH)) {
                Ok(p) => {
                    if !p.errors.is_empty() && !warned.swap(true, Ordering::Relaxed) {
                        tracing::warn!("{}: {}", crate::report::kernel_events::PATH, p.errors.join("; "));
                    }
                    m.kernel_events = p.counters;
                }
                Err(e) => {
                    if !warned.swap(true, Ordering::Relaxed) {
                        tracing::warn!("reading {}: {e}", crate::report::kernel_events::PATH);
                    }
                }
            }
            m.to_json()
        }),
    );
    StatsServer::new(data).launch()
}

/// Where scx_stats serves the scheduler loaded now.
pub const SOCKET: &str = "/var/run/scx/root/stats";

/// Read the counters from a running scheduler's scx_stats socket.
pub fn fetch() -> anyhow::Result<Metrics> {
    fetch_within(None)
}

/// As `fetch`, giving up after `timeout` on each of the request's write and
/// read (None: waits as long as the agent takes): for readers that must not
/// hang on an agent that does not answer.
pub fn fetch_within(timeout: Option<std::time::Duration>) -> anyhow::Result<Metrics> {
    use anyhow::Context;
    let mut client = StatsClient::new()
        .connect(timeout.map(|t| t.as_millis().max(1) as u64))
        .with_context(|| format!("no scheduler on the scx_stats socket {SOCKET} (is scx_chameleon running? are you root?)"))?;
    client.request::<Metrics>("stats", vec![]).with_context(|| format!("reading the counters from {SOCKET}"))
}

#[cfg(test)]
mod tests;
