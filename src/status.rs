//! The agent's view of objects, written as JSON for `scx_chameleon status`
//! (and tests) to read without talking to the agent.

use crate::node_manager::NodeManager;
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const DEFAULT_PATH: &str = "/run/scx_chameleon/status.json";

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct ObjectStatus {
    pub pid: i32,
    pub cpus: Vec<usize>,
    pub gen: u32,
}

#[derive(Debug, Serialize, Deserialize, PartialEq)]
pub struct Snapshot {
    pub agent_pid: u32,
    pub objects: Vec<ObjectStatus>,
    /// Tagged tasks and what they asked for: (pid, level, weight).
    pub requesters: Vec<(i32, u32, u32)>,
    pub nodes: Vec<Vec<usize>>,
    pub defrag_moves: u64,
}

pub struct Status {
    path: PathBuf,
}

impl Status {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Status { path: path.into() }
    }

    pub fn snapshot(m: &NodeManager) -> Snapshot {
        Snapshot {
            agent_pid: std::process::id(),
            objects: m
                .objects()
                .iter()
                .map(|(&pid, o)| ObjectStatus { pid, cpus: o.cpus.clone(), gen: o.gen })
                .collect(),
            requesters: m.requesters().map(|(pid, r)| (pid, r.level, r.weight)).collect(),
            nodes: m.nodes().iter().map(|n| n.slots.clone()).collect(),
            defrag_moves: m.nr_defrag_moves,
        }
    }

    /// Write atomically (rename), so a reader never sees half a file.
    pub fn write(&self, m: &NodeManager) {
        if let Err(e) = self.try_write(m) {
            tracing::warn!("writing {}: {e:#}", self.path.display());
        }
    }

    fn try_write(&self, m: &NodeManager) -> Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&Self::snapshot(m))?)?;
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
