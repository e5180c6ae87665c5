//! The agent's view — CPU states, objects with their owners, tags, parked
//! CPUs, automatic taxes, the module's state — built by one producer
//! (`Status::snapshot`): answered live by the control op `status`, and
//! written as JSON, atomically on every change and each second, as the
//! record of what the agent last knew when it cannot answer (stuck, gone,
//! the reader not root). No counters: numbers go out on scx_stats only
//! (metrics.rs), where `scx_chameleon status` fetches them.

use crate::nodes::node_manager::NodeManager;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const DEFAULT_PATH: &str = "/run/scx_chameleon/status.json";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ObjectStatus {
    pub pid: i32,
    /// The owner's cgroup id (0 if unknown).
    pub cgroup: u64,
    pub cpus: Vec<usize>,
    pub gen: u32,
}

/// What a CPU is doing: "native" (runs a task of its own), "idle", "rep" (runs
/// a fused object) or "borrowed".
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CpuStatus {
    pub cpu: usize,
    pub online: bool,
    pub role: String,
    /// rep: the fused task; borrowed: the representative CPU lending it.
    pub with: i64,
    /// The performance target last handed to the kernel (0..=1024), if any.
    #[serde(default)]
    pub perf: Option<u32>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Live {
    pub cpus: Vec<CpuStatus>,
    /// Tags in force: (cgroup id, stored form).
    pub tags: Vec<(u64, String)>,
    /// Owner cgroup of each object's task.
    pub owners: Vec<(i32, u64)>,
    /// CPUs parked (`scx_chameleon park`).
    pub parked: Vec<usize>,
    /// The companion module's view, if it is loaded.
    pub module: Option<ModuleStatus>,
    /// Tasks whose tax is automatic.
    pub auto_tax: Vec<AutoTaxStatus>,
}

/// A `tax=auto` task's controller (auto_tax.rs), as `status` shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct AutoTaxStatus {
    pub pid: i32,
    /// Hundredths: what it pays outside explorations.
    pub tax: u32,
    /// Progress rate fused / native, once measured.
    pub speedup: Option<f64>,
    /// Where its progress comes from: file, instructions or none.
    pub source: String,
    /// Paired ratios fused / native its speed-up is the median of.
    pub pairs: usize,
    /// An exploration under way: "native" or "fused".
    pub exploring: Option<String>,
}

/// chameleon_proxy's state: which CPUs are lent now and to whom (processor
/// proxies), which it holds offline, the emulation. Its numbers (lends,
/// interruptions lent CPUs took, park latencies) are metrics, not this.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct ModuleStatus {
    /// The policy calls its kfuncs (it was loaded before the scheduler).
    pub kfuncs: bool,
    /// CPUs lent now: (cpu, proxied by).
    pub proxies: Vec<(usize, i32)>,
    /// CPUs the module took offline and still holds.
    pub offlined: Vec<usize>,
    /// Emulation category (low, med, high) if on, with each CPU's duty cycle in per mille.
    pub emulate: Option<String>,
    pub duty: Vec<u32>,
}

#[derive(Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Snapshot {
    pub agent_pid: u32,
    /// When it was written, seconds since the epoch (0: unknown).
    #[serde(default)]
    pub written_at: u64,
    pub objects: Vec<ObjectStatus>,
    /// Tagged tasks and what they asked for: (pid, level, weight).
    pub requesters: Vec<(i32, u32, u32)>,
    pub nodes: Vec<Vec<usize>>,
    /// The CPUs the node manager places objects on (believed online).
    #[serde(default)]
    pub manager_online: Vec<usize>,
    pub defrag_moves: u64,
    #[serde(default)]
    pub cpus: Vec<CpuStatus>,
    #[serde(default)]
    pub tags: Vec<(u64, String)>,
    #[serde(default)]
    pub parked: Vec<usize>,
    #[serde(default)]
    pub module: Option<ModuleStatus>,
    #[serde(default)]
    pub auto_tax: Vec<AutoTaxStatus>,
    /// The agent's --run-id, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<u64>,
}

pub struct Status {
    path: PathBuf,
    run_id: Option<u64>,
}

impl Status {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Status { path: path.into(), run_id: None }
    }

    pub fn with_run_id(mut self, run_id: Option<u64>) -> Self {
        self.run_id = run_id;
        self
    }

    pub fn snapshot(m: &NodeManager, live: &Live) -> Snapshot {
        let owner = |pid: i32| live.owners.iter().find(|(p, _)| *p == pid).map_or(0, |(_, c)| *c);
        Snapshot {
            agent_pid: std::process::id(),
            written_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            objects: m
                .objects()
                .iter()
                .map(|(&pid, o)| ObjectStatus { pid, cgroup: owner(pid), cpus: o.cpus.clone(), gen: o.gen })
                .collect(),
            requesters: m.requesters().map(|(pid, r)| (pid, r.level, r.weight)).collect(),
            nodes: m.nodes().iter().map(|n| n.slots.clone()).collect(),
            manager_online: m.online().collect(),
            defrag_moves: m.nr_defrag_moves,
            cpus: live.cpus.clone(),
            tags: live.tags.clone(),
            parked: live.parked.clone(),
            module: live.module.clone(),
            auto_tax: live.auto_tax.clone(),
            run_id: None,
        }
    }

    /// The snapshot as this agent reports it (with its run id).
    pub fn current(&self, m: &NodeManager, live: &Live) -> Snapshot {
        Snapshot { run_id: self.run_id, ..Self::snapshot(m, live) }
    }

    /// Write atomically (rename), so a reader never sees half a file.
    pub fn write(&self, m: &NodeManager, live: &Live) {
        if let Err(e) = self.try_write(m, live) {
            tracing::warn!("writing {}: {e:#}", self.path.display());
        }
    }

    /// The temporary file is created fresh (O_EXCL) and never through a
    /// symlink (O_NOFOLLOW): a link planted at its name, or at the status
    /// path (rename replaces the link, not its target), cannot make root
    /// write elsewhere.
    fn try_write(&self, m: &NodeManager, live: &Live) -> Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        let _ = std::fs::remove_file(&tmp);
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o644)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)
            .with_context(|| format!("creating {}", tmp.display()))?;
        let snap = self.current(m, live);
        f.write_all(&serde_json::to_vec_pretty(&snap)?)?;
        drop(f);
        std::fs::rename(&tmp, &self.path)?;
        Ok(())
    }

    pub fn remove(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Read what a running agent wrote.
pub fn read(path: &Path) -> Result<Snapshot> {
    let data = std::fs::read(path)
        .with_context(|| format!("{}: is scx_chameleon running?", path.display()))?;
    serde_json::from_slice(&data).with_context(|| format!("{}: not a status file", path.display()))
}

/// Why a snapshot no longer describes a running agent, if it does not: the
/// agent that wrote it is gone (killed with no chance to remove the file), or
/// it has not been rewritten for far longer than its one-second period.
pub fn stale(snap: &Snapshot, now_secs: u64) -> Option<String> {
    let comm = std::fs::read_to_string(format!("/proc/{}/comm", snap.agent_pid)).unwrap_or_default();
    if comm.trim_end() != "scx_chameleon" {
        return Some(format!("STALE: written by agent pid {}, which is no longer running", snap.agent_pid));
    }
    if snap.written_at != 0 && now_secs.saturating_sub(snap.written_at) > 10 {
        return Some(format!("STALE: last written {} s ago", now_secs - snap.written_at));
    }
    None
}

#[cfg(test)]
mod tests;
