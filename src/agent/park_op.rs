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
struct Pending {
    id: u64,
    cpus: Vec<usize>,
    holdoff_ms: Option<u32>,
    t0: Instant,
    policy_ns: u64,
    reply: Reply,
}

/// What a park or unpark works on: the node manager it commits to, the
/// policy's map and program, and the module's thread (None: no module).
pub struct ParkCtx<'c> {
    pub assign: &'c mut Assigner,
    pub map: &'c dyn MapCore,
    pub prog: &'c libbpf_rs::ProgramMut<'c>,
    pub module: Option<&'c ModuleWorker>,
    pub nr_cpus: usize,
}

/// The loop's parks and unparks: the one waiting for the module, if any,
/// and the id of the last one asked (ids are never reused: an answer from
/// the module matches only the request it answers).
#[derive(Default)]
pub struct Parking {
    pending: Option<Pending>,
    last_id: u64,
}

impl Parking {
    /// Start `park` (`holdoff_ms` given) or `unpark` of `list`. Answers at
    /// once (an error, or done without a module) or waits for the module,
    /// which was asked to do its part (`module_done`).
    pub fn start(&mut self, ctx: ParkCtx<'_>, list: &str, holdoff_ms: Option<u32>, reply: Reply) {
        self.last_id += 1;
        if let Some(p) = self.begin(ctx, list, holdoff_ms, reply) {
            self.pending = Some(p);
        }
    }

    /// `start` of request `last_id`: what waits for the module now, if
    /// anything. Refused while another waits for the module.
    fn begin(&self, ctx: ParkCtx<'_>, list: &str, holdoff_ms: Option<u32>, reply: Reply) -> Option<Pending> {
        macro_rules! refuse {
            ($r:expr) => {{
                let _ = reply.send($r);
                return None;
            }};
        }
        if self.pending.is_some() {
            refuse!(Response::err("a park or unpark is under way; try again when it is done"));
        }
        let park = holdoff_ms.is_some();
        // Bounded while read (cpulist.rs): the request comes from a socket, and
        // expanding "0-4000000000" here would take the loop and its memory.
        let cpus = match crate::cpulist::CpuList::parse(list, ctx.nr_cpus) {
            Ok(c) => c.cpus().to_vec(),
            Err(e) => refuse!(Response::err(e)),
        };
        let online = crate::nodes::node::online_cpus().unwrap_or_default();
        if let Err(e) = crate::module::park::check(&cpus, park, &online, ctx.assign.parked(), ctx.nr_cpus) {
            refuse!(Response::err(format!("{e:#}")));
        }
        let t0 = Instant::now();
        if let Err(e) = crate::module::park::run_policy(ctx.prog, &cpus, park) {
            refuse!(Response::err(format!("the policy's chameleon_park: {e:#}")));
        }
        let policy_ns = t0.elapsed().as_nanos() as u64;
        let id = self.last_id;
        let p = Pending { id, cpus, holdoff_ms, t0, policy_ns, reply };
        match ctx.module {
            Some(m) if m.park(id, p.cpus.clone(), holdoff_ms) => Some(p),
            Some(_) => {
                let _ = crate::module::park::run_policy(ctx.prog, &p.cpus, !park);
                let _ = p.reply.send(Response::err("chameleon_proxy: the module's thread is gone"));
                None
            }
            None => {
                finish(ctx, p, None);
                None
            }
        }
    }

    /// The module's part of park or unpark `id` is done: its outcome is
    /// committed or undone (`finish`) if `id` is the one waiting.
    pub fn module_done(&mut self, ctx: ParkCtx<'_>, id: u64, result: Result<u64, String>) {
        if let Some(p) = self.pending.take_if(|p| p.id == id) {
            finish(ctx, p, Some(result));
        }
    }
}

/// The module's part is done (`module`: its outcome; None without a module):
/// commit to the node manager or undo the policy's part, and answer.
fn finish(ctx: ParkCtx<'_>, p: Pending, module: Option<Result<u64, String>>) {
    let park = p.holdoff_ms.is_some();
    if let Some(Err(e)) = &module {
        let _ = crate::module::park::run_policy(ctx.prog, &p.cpus, !park);
        let _ = p.reply.send(Response::err(format!("chameleon_proxy: {e}")));
        return;
    }
    let total_us = p.t0.elapsed().as_micros();
    ctx.assign.set_parked(ctx.map, &p.cpus, park);
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
