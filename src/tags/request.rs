//! A tag asked for over the control socket (`tag` and `untag` ops), as the
//! NRI plugin asks for a container's cgroup from its pod's annotations.
//!
//! The settings are checked by `Props::set`, the check `scx_chameleon tag`
//! and the rules file use, and the tag is stored on the cgroup as the CLI
//! stores it (store.rs): it outlives the agent, the plugin and the runtime,
//! and goes with the cgroup. A refused request changes nothing and names its
//! reason in one word, the label of `chameleon_nri_rejected_total`.

use crate::tags::cgroup_dir::Tree;
use crate::tags::store;
use crate::tags::tag::Props;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;

/// Why a request was refused: the setting at fault, an unknown key, or the
/// cgroup (absent, the root, not cgroup v2, not writable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    Level,
    Weight,
    Tax,
    Smt,
    Prio,
    UnknownKey,
    Cgroup,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::Level => "level",
            Reason::Weight => "weight",
            Reason::Tax => "tax",
            Reason::Smt => "smt",
            Reason::Prio => "prio",
            Reason::UnknownKey => "unknown_key",
            Reason::Cgroup => "cgroup",
        }
    }

    fn of_key(key: &str) -> Reason {
        match key.trim() {
            "level" => Reason::Level,
            "weight" => Reason::Weight,
            "tax" => Reason::Tax,
            "smt" => Reason::Smt,
            "prio" => Reason::Prio,
            _ => Reason::UnknownKey,
        }
    }
}

#[derive(Debug)]
pub struct Rejected {
    pub reason: Reason,
    pub error: anyhow::Error,
}

impl std::fmt::Display for Rejected {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

/// Who asks: counted apart, so that the NRI plugin's refusals are the
/// `nri_rejected` counters and the CLI's are not.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    #[default]
    Cli,
    Nri,
}

/// The tag these settings ask for: the defaults, then each setting in turn.
/// Pure: nothing is read or written.
pub fn props(set: &BTreeMap<String, String>) -> Result<Props, Rejected> {
    let mut p = Props::default();
    for (k, v) in set {
        p.set(k, v).map_err(|error| Rejected { reason: Reason::of_key(k), error })?;
    }
    Ok(p)
}

fn on_cgroup(error: anyhow::Error) -> Rejected {
    Rejected { reason: Reason::Cgroup, error }
}

/// Check the settings and store the tag on `cgroup` (a cgroup v2 directory,
/// not the root), replacing any tag it had: the request says the whole tag.
pub fn tag(cgroup: &Path, set: &BTreeMap<String, String>) -> Result<Props, Rejected> {
    let p = props(set)?;
    let dir = Tree::cgroup().and_then(|t| t.resolve(cgroup)).map_err(on_cgroup)?;
    store::write(&dir, &p).map_err(on_cgroup)?;
    Ok(p)
}

/// Remove `cgroup`'s own tag; whether it had one. A cgroup already gone
/// has none.
pub fn untag(cgroup: &Path) -> Result<bool, Rejected> {
    if !cgroup.exists() {
        return Ok(false);
    }
    let dir = Tree::cgroup().and_then(|t| t.resolve(cgroup)).map_err(on_cgroup)?;
    store::remove(&dir).map_err(on_cgroup)
}

/// Refusals of the NRI plugin's requests since the agent started, by reason.
/// One control server per agent process: a process-wide count.
static NRI_REJECTED: Mutex<BTreeMap<Reason, u64>> = Mutex::new(BTreeMap::new());

pub fn count(via: Via, reason: Reason) {
    if via == Via::Nri {
        *NRI_REJECTED.lock().unwrap_or_else(|e| e.into_inner()).entry(reason).or_default() += 1;
    }
}

/// The counts by reason name (metrics.rs `nri_rejected`).
pub fn nri_rejected() -> BTreeMap<String, u64> {
    NRI_REJECTED.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(r, n)| (r.name().to_string(), *n)).collect()
}

#[cfg(test)]
mod tests;
