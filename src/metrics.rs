//! Counters for the scx ecosystem's monitoring: served with scx_stats on its
//! usual socket (/var/run/scx/root/stats, request "stats"), read back by
//! `scx_chameleon --monitor N`, and rendered as OpenMetrics text by
//! `scx_chameleon metrics`.

use crate::stats::Totals;
use scx_stats::prelude::*;
use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};
use std::fmt::Write;
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
    #[stat(desc = "milliseconds tasks ran under the scheduler")]
    pub busy_ms: u64,
    #[stat(desc = "events lost because the ring buffer was full")]
    pub events_dropped: u64,
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
            busy_ms: t.busy_ns / 1_000_000,
            events_dropped,
        }
    }

    /// OpenMetrics text exposition: every field is a monotonic counter.
    pub fn openmetrics(&self) -> String {
        let v = serde_json::to_value(self).expect("plain counters serialize");
        let meta = Metrics::meta();
        let mut out = String::new();
        for (name, field) in &meta.fields {
            let value = v.get(name).and_then(|x| x.as_u64()).unwrap_or(0);
            let desc = field.attrs.desc.as_deref().unwrap_or("");
            let _ = writeln!(out, "# TYPE chameleon_{name} counter");
            let _ = writeln!(out, "# HELP chameleon_{name} {desc}");
            let _ = writeln!(out, "chameleon_{name}_total {value}");
        }
        out.push_str("# EOF\n");
        out
    }
}

/// Serve `latest` on the scx_stats socket until the process exits.
pub fn serve(latest: Arc<Mutex<Metrics>>) -> anyhow::Result<StatsServer<(), ()>> {
    let data = StatsServerData::<(), ()>::new().add_meta(Metrics::meta()).add_stats(
        "top",
        Box::new(move |_args, _chan| latest.lock().unwrap().to_json()),
    );
    StatsServer::new(data).launch()
}

/// Read the counters from a running scheduler's scx_stats socket.
pub fn fetch() -> anyhow::Result<Metrics> {
    use anyhow::Context;
    let mut client = StatsClient::new()
        .connect(None)
        .context("no scheduler on the scx_stats socket /var/run/scx/root/stats (is scx_chameleon running?)")?;
    client.request::<Metrics>("stats", vec![])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmetrics_lists_every_counter_and_ends_with_eof() {
        let m = Metrics { fuse: 7, split: 5, ..Default::default() };
        let text = m.openmetrics();
        assert!(text.contains("# TYPE chameleon_fuse counter\n"), "{text}");
        assert!(text.contains("chameleon_fuse_total 7\n"), "{text}");
        assert!(text.contains("chameleon_split_total 5\n"), "{text}");
        assert!(text.contains("# HELP chameleon_proxy_served per-CPU kthreads"), "{text}");
        assert!(text.ends_with("# EOF\n"));
        assert_eq!(text.matches("# TYPE").count(), 9);
    }
}
