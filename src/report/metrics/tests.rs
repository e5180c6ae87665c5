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
    // Every field but kernel_events and nri_rejected, families with no
    // sample here (the encoder leaves out a family with none).
    assert_eq!(text.matches("# TYPE").count(), 46);
    assert!(text.contains("# TYPE chameleon_llc_taken counter\n"), "{text}");
    // The policy's broken-invariant counters are exported, as counters.
    for name in ["invariant_lent_to_non_rep", "invariant_owner_gone", "invariant_queue_forbidden"] {
        assert!(text.contains(&format!("# TYPE chameleon_{name} counter\n")), "{name}: {text}");
    }
    assert!(text.contains("chameleon_proxy_module_loaded 0\n"), "no module: loaded 0\n{text}");
    assert!(!text.contains("sampled_ms"), "the sample's time is not a metric: {text}");
}

#[test]
fn the_loops_lateness_is_one_histogram_in_seconds() {
    let mut l = crate::report::lateness::Lateness::default();
    l.record(std::time::Duration::from_micros(3));
    l.record(std::time::Duration::from_millis(300));
    let m = Metrics::default().with_lateness(&l);
    assert_eq!(m.loop_late_p99_us, 300_000);
    assert_eq!(m.lateness(), l, "read back from the exported form");
    let text = m.openmetrics();
    assert!(text.contains("# TYPE chameleon_loop_late_seconds histogram\n"), "{text}");
    assert!(text.contains("chameleon_loop_late_seconds_count 2\n"), "{text}");
    assert!(text.contains("chameleon_loop_late_seconds_bucket{le=\"4e-6\"} 1\n") || text.contains("le=\"0.000004\"} 1\n"), "{text}");
    assert!(text.contains("chameleon_loop_late_seconds_bucket{le=\"+Inf\"} 2\n"), "{text}");
    assert!(text.contains("# TYPE chameleon_loop_late_p99_us gauge\n"), "{text}");
}

#[test]
fn the_run_id_is_a_gauge_and_help_stats_describes_every_field() {
    let text = Metrics::default().with_run_id(Some(4242)).openmetrics();
    assert!(text.contains("# TYPE chameleon_run_id gauge\n"), "{text}");
    assert!(text.contains("\nchameleon_run_id 4242\n"), "{text}");
    let mut out = Vec::new();
    describe(&mut out).unwrap();
    let out = String::from_utf8(out).unwrap();
    for name in Metrics::meta().fields.keys() {
        assert!(out.contains(name.as_str()), "--help-stats lacks {name}:\n{out}");
    }
    assert!(out.contains("objects fused whole"), "{out}");
}

#[test]
fn module_proxies_and_interruptions_become_counters_and_gauges() {
    let module = crate::report::module_read::ModuleRead {
        state: crate::report::status::ModuleStatus { kfuncs: true, proxies: vec![(1, 0), (3, 2)], ..Default::default() },
        counters: crate::report::module_read::ModuleCounters {
            lends: 40,
            reclaims: 39,
            irqs_moved: 2,
            managed_skipped: 3,
            lent_irqs: 5,
            lent_softirqs: 6,
            lent_ipis: 7,
            lent_timers: 8,
            park_critical_ns: 9_000,
            park_physical_ns: 10_000,
            unpark_critical_ns: 11_000,
            unpark_physical_ns: 12_000,
        },
    };
    let text = Metrics::default().with_module(Some(&module)).openmetrics();
    for line in [
        "# TYPE chameleon_proxy_lent_cpus gauge\n",
        "chameleon_proxy_lent_cpus 2\n",
        "chameleon_proxy_module_loaded 1\n",
        "chameleon_proxy_kfuncs_bound 1\n",
        "chameleon_proxy_irqs_moved 2\n",
        "# TYPE chameleon_proxy_lends counter\n",
        "chameleon_proxy_lends_total 40\n",
        "chameleon_proxy_reclaims_total 39\n",
        "chameleon_proxy_lent_irqs_total 5\n",
        "chameleon_proxy_lent_softirqs_total 6\n",
        "chameleon_proxy_lent_ipis_total 7\n",
        "chameleon_proxy_lent_timers_total 8\n",
        "chameleon_proxy_managed_skipped_total 3\n",
        "# TYPE chameleon_proxy_park_critical_ns gauge\n",
        "chameleon_proxy_park_critical_ns 9000\n",
        "chameleon_proxy_park_physical_ns 10000\n",
        "chameleon_proxy_unpark_critical_ns 11000\n",
        "chameleon_proxy_unpark_physical_ns 12000\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    // One TYPE per family, no gauge with a _total sample.
    assert_eq!(text.matches("# TYPE chameleon_proxy_lent_cpus ").count(), 1);
    assert!(!text.contains("chameleon_proxy_lent_cpus_total"));
}

#[test]
fn nri_refusals_are_counted_by_reason() {
    let m = Metrics { nri_rejected: [("level".to_string(), 2), ("unknown_key".to_string(), 1)].into(), ..Default::default() };
    let text = m.openmetrics();
    assert!(text.contains("# TYPE chameleon_nri_rejected counter\n"), "{text}");
    assert!(text.contains("chameleon_nri_rejected_total{reason=\"level\"} 2\n"), "{text}");
    assert!(text.contains("chameleon_nri_rejected_total{reason=\"unknown_key\"} 1\n"), "{text}");
}

#[test]
fn kernel_events_are_one_labelled_counter_family() {
    let events = crate::report::kernel_events::parse("SCX_EV_SELECT_CPU_FALLBACK 12\nSCX_EV_DISPATCH_KEEP_LAST 3\n");
    let m = Metrics { kernel_events: events.counters, ..Default::default() };
    let text = m.openmetrics();
    assert!(text.contains("# TYPE chameleon_kernel_events counter\n"), "{text}");
    assert!(text.contains("chameleon_kernel_events_total{event=\"select_cpu_fallback\"} 12\n"), "{text}");
    assert!(text.contains("chameleon_kernel_events_total{event=\"dispatch_keep_last\"} 3\n"), "{text}");
    assert_eq!(text.matches("# TYPE chameleon_kernel_events ").count(), 1);
    assert!(!text.contains("chameleon_kernel_events_total 0"), "no unlabelled sample: {text}");
    assert!(text.ends_with("# EOF\n"));
    // None (an older kernel): no family, no sample.
    let text = Metrics::default().openmetrics();
    assert!(!text.contains("chameleon_kernel_events"), "{text}");
    assert!(text.ends_with("# EOF\n"));
}

#[test]
fn json_from_an_agent_without_kernel_events_still_reads() {
    let mut v = serde_json::to_value(Metrics { fuse: 2, ..Default::default() }).unwrap();
    v.as_object_mut().unwrap().remove("kernel_events");
    let m: Metrics = serde_json::from_value(v).unwrap();
    assert_eq!((m.fuse, m.kernel_events.len()), (2, 0));
}

#[test]
fn the_policys_counters_read_back_as_totals() {
    let t = crate::report::stats::Totals {
        enqueued: 1,
        direct: 2,
        dispatched: 3,
        stolen: 4,
        kicks: 5,
        busy_ns: 6_000_000,
        fuse: 7,
        partial: 8,
        fuse_denied: 9,
        split: 10,
        proxy_served: 11,
        kthread_keeps: 12,
        wake_preempts: 13,
        fast_moves: 14,
        llc_queued: 15,
        llc_taken: 16,
        llc_far: 17,
    };
    // Every field of the printed line survives the trip through the socket
    // (busy time to the millisecond, as served).
    let served: Metrics = serde_json::from_value(serde_json::to_value(Metrics::from_totals(&t, 0)).unwrap()).unwrap();
    assert_eq!(served.totals(), t);
    assert_eq!(served.totals().to_string(), t.to_string());
}

#[test]
fn the_agents_limits_are_exported() {
    let l = Limits { requesters_refused: 3, demand_pid_reused: 1, auto_tax_no_counter: 2, pidfds_held: 4096, control_accept_backoffs: 7 };
    let text = Metrics::default().with_limits(l).openmetrics();
    for line in [
        "chameleon_requesters_refused_total 3\n",
        "chameleon_demand_pid_reused_total 1\n",
        "chameleon_auto_tax_no_counter_total 2\n",
        "chameleon_control_accept_backoffs_total 7\n",
        "# TYPE chameleon_pidfds_held gauge\n",
        "chameleon_pidfds_held 4096\n",
    ] {
        assert!(text.contains(line), "{line:?} missing:\n{text}");
    }
}
