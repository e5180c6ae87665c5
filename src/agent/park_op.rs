//! `park` and `unpark` requests, as the loop runs them: the policy's
//! critical part (chameleon_park) at once, the module's (IRQs now, offline
//! after the hold-off) on the module's thread (module_worker.rs), then the
//! node manager when the module is done. All or nothing: if the module
//! refuses, the policy's part is undone. One at a time: a request while
//! another waits for the module is refused, so two never disagree about
//! which CPUs are parked.

use crate::agent::assign::Assigner;
use crate::control::Response;
use crate::agent::inbox::Reply;
use crate::agent::module_worker::ModuleWorker;
use libbpf_rs::MapCore;
use std::time::Instant;
use tracing::info;

/// A park or unpark waiting for the module.
pub struct Pending {
    pub id: u64,
    cpus: Vec<usize>,
    holdoff_ms: Option<u32>,
    t0: Instant,
    policy_ns: u64,
    reply: Reply,
}

/// Start `park` (`holdoff_ms` given) or `unpark` of `list`. Answers at once
/// (an error, or done without a module) or returns what waits for the
/// module, which `module` was asked to do.
#[allow(clippy::too_many_arguments)]
pub fn start(
    assign: &mut Assigner,
    map: &dyn MapCore,
    prog: &libbpf_rs::ProgramMut<'_>,
    module: Option<&ModuleWorker>,
    pending: bool,
    id: u64,
    nr_cpus: usize,
    list: &str,
    holdoff_ms: Option<u32>,
    reply: Reply,
) -> Option<Pending> {
    macro_rules! refuse {
        ($r:expr) => {{
            let _ = reply.send($r);
            return None;
        }};
    }
    if pending {
        refuse!(Response::err("a park or unpark is under way; try again when it is done"));
    }
    let park = holdoff_ms.is_some();
    // Bounded while read (cpulist.rs): the request comes from a socket, and
    // expanding "0-4000000000" here would take the loop and its memory.
    let cpus = match crate::cpulist::CpuList::parse(list, nr_cpus) {
        Ok(c) => c.cpus().to_vec(),
        Err(e) => refuse!(Response::err(e)),
    };
    let online = crate::nodes::node::online_cpus().unwrap_or_default();
    if let Err(e) = crate::module::park::check(&cpus, park, &online, assign.parked(), nr_cpus) {
        refuse!(Response::err(format!("{e:#}")));
    }
    let t0 = Instant::now();
    if let Err(e) = crate::module::park::run_policy(prog, &cpus, park) {
        refuse!(Response::err(format!("the policy's chameleon_park: {e:#}")));
    }
    let policy_ns = t0.elapsed().as_nanos() as u64;
    let p = Pending { id, cpus, holdoff_ms, t0, policy_ns, reply };
    match module {
        Some(m) if m.park(id, p.cpus.clone(), holdoff_ms) => Some(p),
        Some(_) => {
            let _ = crate::module::park::run_policy(prog, &p.cpus, !park);
            let _ = p.reply.send(Response::err("chameleon_proxy: the module's thread is gone"));
            None
        }
        None => {
            finish(assign, map, prog, p, None);
            None
        }
    }
}

/// The module's part is done (`module`: its outcome; None without a module):
/// commit to the node manager or undo the policy's part, and answer.
pub fn finish(assign: &mut Assigner, map: &dyn MapCore, prog: &libbpf_rs::ProgramMut<'_>, p: Pending, module: Option<Result<u64, String>>) {
    let park = p.holdoff_ms.is_some();
    if let Some(Err(e)) = &module {
        let _ = crate::module::park::run_policy(prog, &p.cpus, !park);
        let _ = p.reply.send(Response::err(format!("chameleon_proxy: {e}")));
        return;
    }
    let total_us = p.t0.elapsed().as_micros();
    assign.set_parked(map, &p.cpus, park);
    let what = crate::module::park::list(&p.cpus);
    let policy_us = p.policy_ns / 1000;
    let detail = match (module, p.holdoff_ms) {
        (Some(Ok(m)), Some(h)) => format!(
            "parked {what} in {total_us} us (policy {policy_us} us, module {} us); offline in {h} ms unless unparked",
            m / 1000
        ),
        (Some(Ok(m)), None) => format!(
            "unparked {what} in {total_us} us (policy {policy_us} us, module {} us); any the module took offline come back online now",
            m / 1000
        ),
        (_, Some(_)) => format!("parked {what} in {total_us} us, in the scheduler only (no chameleon_proxy module: they stay online, idle)"),
        (_, None) => format!("unparked {what} in {total_us} us"),
    };
    info!("{detail}");
    let _ = p.reply.send(Response::ok(detail));
}
