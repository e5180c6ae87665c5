//! The policy before it runs: opened and configured from the options and
//! the machine (.rodata, struct_ops fields, which programs load), then
//! loaded (verified), its maps filled, and attached.

use crate::agent::apply_tags::TagInputs;
use crate::agent::opts::Opts;
use crate::bpf_intf::{self, as_bytes};
use crate::bpf_skel::{BpfSkel, BpfSkelBuilder, OpenBpfSkel};
use crate::tags::tag::Props;
use anyhow::{Context, Result};
use libbpf_rs::{Link, MapCore, MapFlags, OpenObject};
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open};
use std::collections::HashMap;
use std::mem::MaybeUninit;
use std::time::Instant;
use tracing::{debug, info, warn};

/// Open the policy and configure it for `opts` on this machine, with
/// `nr_cpus` possible CPUs; nothing is loaded yet.
pub fn open<'a>(opts: &Opts, nr_cpus: usize, open_object: &'a mut MaybeUninit<OpenObject>) -> Result<OpenBpfSkel<'a>> {
    let builder = BpfSkelBuilder::default();
    if opts.verifier_log {
        libbpf_rs::set_print(Some((libbpf_rs::PrintLevel::Debug, |_, msg: String| eprint!("{msg}"))));
    }
    let open_opts = opts.libbpf.clone().into_bpf_open_opts();
    let mut skel = scx_ops_open!(builder, open_object, chameleon_ops, open_opts)?;
    set_rodata(&mut skel, opts, nr_cpus)?;
    set_llc_queues(&mut skel, opts, nr_cpus)?;
    set_numa(&mut skel, opts)?;
    set_ops(&mut skel, opts)?;
    skel.maps.steal_orders.set_max_entries(nr_cpus as u32)?;
    Ok(skel)
}

/// The options the policy reads as constants, and each CPU's shard of the
/// cgroup weights.
fn set_rodata(skel: &mut OpenBpfSkel, opts: &Opts, nr_cpus: usize) -> Result<()> {
    let rodata = skel.maps.rodata_data.as_mut().context("no .rodata in BPF object")?;
    rodata.slice_ns = opts.slice_us * 1000;
    rodata.cpuperf_on = opts.cpuperf;
    rodata.nr_cpus = nr_cpus as u32;
    rodata.agent_tgid = std::process::id() as i32;
    rodata.min_gran_ns = opts.min_gran_us * 1000;
    rodata.wake_gran_ns = opts.wake_gran_us * 1000;
    rodata.lend_wait_ns = opts.lend_wait_ms * 1_000_000;
    rodata.run_id = opts.run_id.unwrap_or(0);
    rodata.test_error_after_ns = opts.test_error_after.map_or(0, |d| d.as_nanos().max(1) as u64);
    let shards = crate::nodes::cg_shard::cg_shards(
        &crate::nodes::steal::places()?,
        nr_cpus,
        bpf_intf::CHAMELEON_CG_SHARDS as usize,
    );
    rodata.cpu_cg_shard[..nr_cpus].copy_from_slice(&shards);
    Ok(())
}

/// --llc-queues: a queue per LLC, where there are no more LLCs than the
/// policy has queues for.
fn set_llc_queues(skel: &mut OpenBpfSkel, opts: &Opts, nr_cpus: usize) -> Result<()> {
    let rodata = skel.maps.rodata_data.as_mut().context("no .rodata in BPF object")?;
    let llcs = crate::nodes::cg_shard::llc_ranks(&crate::nodes::steal::places()?, nr_cpus);
    let nr_llcs = llcs.iter().map(|&l| l as usize + 1).max().unwrap_or(1);
    rodata.llc_queues = opts.llc_queues && nr_llcs <= bpf_intf::chameleon_consts_CHAMELEON_MAX_LLCS as usize;
    if rodata.llc_queues {
        rodata.nr_llcs = nr_llcs as u32;
        rodata.cpu_llc[..nr_cpus].copy_from_slice(&llcs);
        info!("LLC queues: {nr_llcs}");
    } else if opts.llc_queues {
        info!("{nr_llcs} LLCs, more than the {} LLC queues: per-CPU queues only", bpf_intf::chameleon_consts_CHAMELEON_MAX_LLCS);
    }
    Ok(())
}

/// Several NUMA nodes: the kernel keeps each node's idle CPUs in a mask of
/// its own, written by that node's CPUs only. A search looks in the task's
/// node, then at the other nodes' masks in the order written here, nearest
/// first (idle_pick_in(), chameleon.bpf.h).
fn set_numa(skel: &mut OpenBpfSkel, opts: &Opts) -> Result<()> {
    let topo = scx_utils::Topology::new().context("reading the NUMA nodes")?;
    let numa = crate::nodes::numa_order::numa_nodes(&topo);
    let nr_nodes = numa.iter().filter(|n| n.has_cpus).count();
    let per_node = *scx_utils::compat::SCX_OPS_BUILTIN_IDLE_PER_NODE;
    let max_nodes = bpf_intf::chameleon_consts_CHAMELEON_MAX_NODES as usize;
    let orders = crate::nodes::numa_order::orders(&numa, max_nodes);
    if opts.numa && nr_nodes > 1 && per_node != 0 && orders.is_some() {
        let rodata = skel.maps.rodata_data.as_mut().context("no .rodata in BPF object")?;
        rodata.idle_per_node = true;
        rodata.nr_nodes = nr_nodes as u32;
        for (row, order) in rodata.node_order.iter_mut().zip(orders.iter().flatten()) {
            for (slot, &id) in row.iter_mut().zip(order) {
                *slot = id as u8;
            }
        }
        skel.struct_ops.chameleon_ops_mut().flags |= per_node;
        info!("{nr_nodes} NUMA nodes: idle CPUs tracked per node");
    } else if nr_nodes > 1 && opts.numa && per_node != 0 {
        info!("{nr_nodes} NUMA nodes, one with an id of {max_nodes} or more: one idle mask for the machine");
    } else if nr_nodes > 1 {
        info!("{nr_nodes} NUMA nodes: one idle mask for the machine");
    }
    Ok(())
}

/// The struct_ops fields the options set, the verifier's log level, and
/// how the policy sees higher scheduling classes.
fn set_ops(skel: &mut OpenBpfSkel, opts: &Opts) -> Result<()> {
    skel.struct_ops.chameleon_ops_mut().timeout_ms = opts.watchdog_timeout_ms;
    if opts.verifier_log {
        // Level 2: every instruction the verifier walks, by function.
        for mut prog in libbpf_rs::skel::OpenSkel::open_object_mut(skel).progs_mut() {
            prog.set_log_level(2);
        }
    }
    skel.struct_ops.chameleon_ops_mut().exit_dump_len = opts.exit_dump_len;
    // The sched_switch hook sees higher classes come and go (preempt.bpf.c);
    // 6.19+ re-enqueues a local queue from any context, and there the hook
    // replaces ops.cpu_release/cpu_acquire, as the scx schedulers do.
    skel.progs.chameleon_sched_switch.set_autoload(true);
    if scx_utils::compat::ksym_exists("scx_bpf_reenqueue_local___v2")? {
        let ops = skel.struct_ops.chameleon_ops_mut();
        ops.cpu_release = std::ptr::null_mut();
        ops.cpu_acquire = std::ptr::null_mut();
        info!("higher classes: sched_switch hook (ops.cpu_release not registered)");
    }
    Ok(())
}

/// Hybrid CPUs: the fast ones (top capacity), which tasks without an
/// object prefer too.
pub fn set_fast_cpus(skel: &mut OpenBpfSkel, opts: &Opts, nr_cpus: usize) -> Result<()> {
    let fast = crate::nodes::node::fast_cpus_of_topology(&opts.topology);
    if !fast.is_empty() {
        info!("fast CPUs (top capacity): {fast:?}");
        let rodata = skel.maps.rodata_data.as_mut().context("no .rodata in BPF object")?;
        rodata.hybrid = true;
        for cpu in fast.into_iter().filter(|&c| c < nr_cpus) {
            rodata.fast_cpu_bits[cpu / 64] |= 1 << (cpu % 64);
        }
    }
    Ok(())
}

/// Load (verify) the policy, write the tags in force and the steal orders
/// into its maps, and attach it. Returns the loaded policy, its attachment
/// and the tags written. A failure drops what this made, the policy
/// detached first.
pub fn load_and_attach<'a>(mut skel: OpenBpfSkel<'a>, inputs: &mut TagInputs, nr_cpus: usize) -> Result<(BpfSkel<'a>, Link, HashMap<u64, Props>)> {
    let t_load = Instant::now();
    let mut skel = scx_ops_load!(skel, chameleon_ops, uei)?;
    let load_ms = t_load.elapsed().as_millis();
    let tag_ids = crate::agent::apply_tags::apply(&skel.maps.tags, inputs)?.tags;
    write_steal_orders(&skel.maps.steal_orders, nr_cpus)?;
    let t_attach = Instant::now();
    let struct_ops = {
        let _rt = crate::agent::rt_attach::RtWhileAttaching::enter();
        scx_ops_attach!(skel, chameleon_ops)?
    };
    debug!("policy loaded (verified) in {load_ms} ms, attached in {} ms", t_attach.elapsed().as_millis());
    report_verifier(&skel);
    Ok((skel, struct_ops, tag_ids))
}

/// Each CPU's steal order (SMT siblings, LLC, rest) into the policy's map.
fn write_steal_orders(map: &dyn MapCore, nr_cpus: usize) -> Result<()> {
    let places = crate::nodes::steal::places()?;
    for &p in places.iter().filter(|p| p.cpu < nr_cpus) {
        let (cpus, near) = crate::nodes::steal::order(p, &places);
        let mut v = bpf_intf::chameleon_steal_order {
            nr: cpus.len() as u32,
            nr_near: near as u32,
            cpus: [-1; bpf_intf::chameleon_consts_CHAMELEON_MAX_CPUS as usize],
        };
        for (slot, c) in v.cpus.iter_mut().zip(&cpus) {
            *slot = *c as i32;
        }
        map.update(&(p.cpu as u32).to_ne_bytes(), as_bytes(&v), MapFlags::ANY)
            .with_context(|| format!("writing cpu{}'s steal order", p.cpu))?;
    }
    Ok(())
}

/// Print how many instructions the verifier processed for each loaded program
/// and their total: `verifier: total_insns=N (enqueue=…, dispatch=…, …)`. The
/// smoke test compares the total per kernel with a recorded one (a regression
/// guard: TCG verifies slowly, and older verifiers walk more states).
fn report_verifier(skel: &BpfSkel) {
    use libbpf_rs::libbpf_sys;
    use libbpf_rs::skel::Skel;
    use libbpf_rs::AsRawLibbpf;

    let mut total = 0u64;
    let mut each = Vec::new();
    for prog in skel.object().progs() {
        // SAFETY: the program belongs to the loaded object borrowed here.
        let fd = unsafe { libbpf_sys::bpf_program__fd(prog.as_libbpf_object().as_ptr()) };
        if fd < 0 {
            continue; // not loaded
        }
        // SAFETY: a zeroed bpf_prog_info is a valid query (no arrays asked for).
        let mut info: libbpf_sys::bpf_prog_info = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of_val(&info) as u32;
        // SAFETY: info is len bytes, fd a live program fd.
        if unsafe { libbpf_sys::bpf_prog_get_info_by_fd(fd, &mut info, &mut len) } != 0 {
            warn!("no program info for {:?}", prog.name());
            continue;
        }
        total += u64::from(info.verified_insns);
        let name = prog.name().to_string_lossy();
        each.push(format!("{}={}", name.trim_start_matches("chameleon_"), info.verified_insns));
    }
    crate::out!("verifier: total_insns={total} ({})", each.join(", "));
}
