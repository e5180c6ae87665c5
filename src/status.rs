//! The agent's view — CPU states, objects with their owners, tags, counters —
//! written as JSON for `scx_chameleon status` (and tests) to read without
//! talking to the agent. Written atomically on every change and each second.

use crate::node_manager::NodeManager;
use crate::stats::Totals;
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
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct Live {
    pub cpus: Vec<CpuStatus>,
    /// Tags in force: (cgroup id, stored form).
    pub tags: Vec<(u64, String)>,
    pub counters: Option<Totals>,
    /// Owner cgroup of each object's task.
    pub owners: Vec<(i32, u64)>,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Snapshot {
    pub agent_pid: u32,
    pub objects: Vec<ObjectStatus>,
    /// Tagged tasks and what they asked for: (pid, level, weight).
    pub requesters: Vec<(i32, u32, u32)>,
    pub nodes: Vec<Vec<usize>>,
    pub defrag_moves: u64,
    #[serde(default)]
    pub cpus: Vec<CpuStatus>,
    #[serde(default)]
    pub tags: Vec<(u64, String)>,
    #[serde(default)]
    pub counters: Option<Totals>,
}

pub struct Status {
    path: PathBuf,
}

impl Status {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Status { path: path.into() }
    }

    pub fn snapshot(m: &NodeManager, live: &Live) -> Snapshot {
        let owner = |pid: i32| live.owners.iter().find(|(p, _)| *p == pid).map_or(0, |(_, c)| *c);
        Snapshot {
            agent_pid: std::process::id(),
            objects: m
                .objects()
                .iter()
                .map(|(&pid, o)| ObjectStatus { pid, cgroup: owner(pid), cpus: o.cpus.clone(), gen: o.gen })
                .collect(),
            requesters: m.requesters().map(|(pid, r)| (pid, r.level, r.weight)).collect(),
            nodes: m.nodes().iter().map(|n| n.slots.clone()).collect(),
            defrag_moves: m.nr_defrag_moves,
            cpus: live.cpus.clone(),
            tags: live.tags.clone(),
            counters: live.counters,
        }
    }

    /// Write atomically (rename), so a reader never sees half a file.
    pub fn write(&self, m: &NodeManager, live: &Live) {
        if let Err(e) = self.try_write(m, live) {
            tracing::warn!("writing {}: {e:#}", self.path.display());
        }
    }

    fn try_write(&self, m: &NodeManager, live: &Live) -> Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&Self::snapshot(m, live))?)?;
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
