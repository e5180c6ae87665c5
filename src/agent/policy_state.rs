//! What the agent reads of the policy's state in its .bss: each CPU's role
//! for the status, the per-CPU counters summed, the broken-invariant
//! counters, and the summary printed at exit. The .bss is the policy's to
//! write; the agent only reads here.

use crate::bpf_skel::BpfSkel;
use crate::report::stats::Totals;

/// CPU states from the policy's .bss, for the status (its counters go to
/// the metrics).
pub fn live_status(skel: &BpfSkel, nr_cpus: usize, parked: Vec<usize>, module: Option<crate::report::status::ModuleStatus>) -> crate::report::status::Live {
    let bss = skel.maps.bss_data.as_ref().expect(".bss is mapped");
    let cpus = (0..nr_cpus)
        .map(|c| {
            let word = bss.cpu_roles[c].word;
            let kind = word & ((1 << crate::bpf_intf::chameleon_consts_CHAMELEON_ROLE_SHIFT) - 1);
            let with = i64::from(word >> crate::bpf_intf::chameleon_consts_CHAMELEON_ROLE_SHIFT) - 1;
            let (role, with) = match kind {
                crate::bpf_intf::chameleon_role_CHAMELEON_ROLE_LENT => ("borrowed", with),
                crate::bpf_intf::chameleon_role_CHAMELEON_ROLE_FUSING
                | crate::bpf_intf::chameleon_role_CHAMELEON_ROLE_REP
                | crate::bpf_intf::chameleon_role_CHAMELEON_ROLE_SPLITTING => ("rep", bss.reps[c].owner as i64),
                crate::bpf_intf::chameleon_role_CHAMELEON_ROLE_PARKED => ("parked", -1),
                _ if bss.cpu_runs[c].running != 0 => ("native", -1),
                _ => ("idle", -1),
            };
            let pf = &bss.cpu_perfs[c];
            let perf = (pf.perf_set != 0).then_some(pf.perf_target);
            crate::report::status::CpuStatus { cpu: c, online: bss.cpu_hps[c].online != 0, role: role.into(), with, perf }
        })
        .collect();
    crate::report::status::Live { cpus, parked, module, ..Default::default() }
}

/// The policy's broken-invariant counters (intf.h), as the summary and the
/// "invariant broken" warning print them; all zero unless the policy has a bug.
pub fn invariants_line(i: &crate::bpf_skel::types::chameleon_invariants) -> String {
    format!(
        "invariants lent_to_non_rep={} owner_gone={} queue_forbidden={}",
        i.lent_to_non_rep, i.owner_gone, i.queue_forbidden
    )
}

/// How many times any invariant broke (the warning is said when it grows).
pub fn invariants_total(i: &crate::bpf_skel::types::chameleon_invariants) -> u64 {
    i.lent_to_non_rep + i.owner_gone + i.queue_forbidden
}

/// The policy's per-CPU counters, summed over the possible CPUs.
pub fn totals(skel: &BpfSkel, nr_cpus: usize) -> Totals {
    let bss = skel.maps.bss_data.as_ref().expect(".bss is mapped");
    Totals::sum(&bss.cpu_stats[..nr_cpus])
}

/// The line printed at exit: the events the loop handled (`nr_events`),
/// the policy's own event and rescue counters, the invariants and the
/// counters since `start`.
pub fn summary_line(skel: &BpfSkel, nr_cpus: usize, nr_events: u64, start: &Totals) -> String {
    let bss = skel.maps.bss_data.as_ref().expect(".bss is mapped");
    format!(
        "summary events={} dropped={} demand_dropped={} cpu_online={} cpu_offline={} rescued={} starved={} guard_runs={} guard_cpus={} guard_sweep_finds={} guard_restarts={} {} {}",
        nr_events,
        bss.nr_events_dropped,
        bss.nr_demand_dropped,
        bss.nr_cpu_online_events,
        bss.nr_cpu_offline_events,
        bss.nr_rescued,
        bss.nr_starved,
        bss.nr_guard_runs,
        bss.nr_guard_cpus,
        bss.nr_guard_sweep_finds,
        bss.nr_guard_restarts,
        invariants_line(&bss.invariants),
        totals(skel, nr_cpus).since(start)
    )
}
