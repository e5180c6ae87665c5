//! Putting the tags in force into the policy's `tags` map: what the agent
//! knows of tags (`--tag`, stored tags, the rules file) becomes one entry per
//! cgroup (descendants included: BPF looks up a task's own cgroup only), and
//! only entries that differ from the map are written, so that applying once
//! a second for the rules costs nothing while nothing changes and tasks are
//! told (tags_gen) only when something did.

use crate::bpf_intf::chameleon_tag;
use crate::tags::rules::RuleSet;
use crate::bpf_intf::as_bytes;
use crate::tags::tag::Props;
use crate::tags::store::{Entry, RuleMatches};
use anyhow::{Context, Result};
use libbpf_rs::{MapCore, MapFlags};
use std::collections::{HashMap, HashSet};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use tracing::{info, warn};

/// An explicit "no tag" (level 0) for a cgroup whose stored tag is damaged,
/// so that cgroup_init (run for every cgroup at attach, and for new
/// children) does not copy the parent's tag over it.
const BLOCKED: chameleon_tag = chameleon_tag { level: 0, weight: 0, tax: 0, smt: 0, prio: 0 };

/// Where tags come from besides the store, held by the agent for its run.
pub struct TagInputs {
    /// `--tag`s.
    pub extra: Vec<(PathBuf, Props)>,
    /// `--rules FILE`: the file, and the rules last read from it that were valid.
    pub rules_file: Option<PathBuf>,
    pub rules: Option<RuleSet>,
    /// CPUs of the largest node: a rule asking for more is refused.
    pub largest_node: usize,
    /// Warnings of the last scan (damaged tags, user.* attributes), logged
    /// when they first appear, not at every scan.
    pub warned: HashSet<String>,
    /// What the rules matched at the last scan (store.rs: a request's scan
    /// reuses them; set `fresh` to match again).
    pub matches: RuleMatches,
}

impl TagInputs {
    pub fn new(extra: Vec<(PathBuf, Props)>, rules_file: Option<PathBuf>, rules: Option<RuleSet>, largest_node: usize) -> Self {
        TagInputs { extra, rules_file, rules, largest_node, warned: HashSet::new(), matches: RuleMatches::default() }
    }

    /// Read and check the rules file; on any error the rules in force stay.
    pub fn reload_rules(&mut self) -> Result<String> {
        let Some(file) = &self.rules_file else {
            anyhow::bail!("the agent was started without --rules FILE: no rules file to reload");
        };
        let rules = load_rules(file, self.largest_node)?;
        let detail = format!("{} rules from {}", rules.rules.len(), file.display());
        self.rules = Some(rules);
        self.matches.fresh = true;
        Ok(detail)
    }

    pub fn has_rules(&self) -> bool {
        self.rules.as_ref().is_some_and(|r| !r.is_empty())
    }
}

/// A rules file, validated as the node topology allows.
pub fn load_rules(file: &Path, largest_node: usize) -> Result<RuleSet> {
    let rules = RuleSet::load(file)?;
    rules.check_levels(largest_node)?;
    Ok(rules)
}

/// The outcome of one application.
pub struct Applied {
    /// The tag in force by cgroup id (damaged ones left out).
    pub tags: HashMap<u64, Props>,
    /// Every cgroup scanned, with its source.
    pub entries: Vec<Entry>,
    /// Whether the map changed (then tasks must re-read their tags).
    pub changed: bool,
}

/// The map as it is: cgroup id -> raw value.
fn snapshot(map: &dyn MapCore) -> HashMap<u64, Vec<u8>> {
    let mut now = HashMap::new();
    for key in map.keys() {
        let Ok(k) = <[u8; 8]>::try_from(key.as_slice()) else { continue };
        if let Ok(Some(v)) = map.lookup(&key, MapFlags::ANY) {
            now.insert(u64::from_ne_bytes(k), v);
        }
    }
    now
}

/// Scan, then write what differs from the map and delete entries no longer
/// in force. The map is read before the scan: a cgroup created in between is
/// either seen by the scan (written) or by neither (BPF's cgroup_init gave it
/// its parent's entry; the next application corrects it if need be).
pub fn apply(map: &dyn MapCore, inputs: &mut TagInputs) -> Result<Applied> {
    let before = snapshot(map);
    let entries = crate::tags::store::scan(crate::tags::store::root(), &inputs.extra, inputs.rules.as_ref(), &mut inputs.matches)?;
    let warnings: HashSet<String> = entries.iter().flat_map(|e| e.warnings.iter().cloned()).collect();
    for w in warnings.difference(&inputs.warned) {
        warn!("{w}");
    }
    inputs.warned = warnings;
    let mut tags = HashMap::new();
    let mut keep = HashSet::new();
    let mut changed = false;
    for e in &entries {
        let value = match (e.effective, &e.error) {
            (Some(p), _) => p.to_bpf(),
            (None, Some(_)) => BLOCKED,
            (None, None) => continue,
        };
        keep.insert(e.id);
        if let Some(p) = e.effective {
            tags.insert(e.id, p);
        }
        if before.get(&e.id).map(Vec::as_slice) == Some(as_bytes(&value)) {
            continue;
        }
        map.update(&e.id.to_ne_bytes(), as_bytes(&value), MapFlags::ANY)
            .with_context(|| format!("tagging cgroup {}", e.path.display()))?;
        changed = true;
        if let (Some(p), Some(src)) = (e.own, &e.source) {
            info!("tag {} (cgroup {}): {} ({src})", e.path.display(), e.id, p.encode());
        }
    }
    for id in before.keys().filter(|id| !keep.contains(id)) {
        // Gone already if the cgroup was removed (cgroup_exit): not an error.
        if map.delete(&id.to_ne_bytes()).is_ok() {
            changed = true;
        }
    }
    if changed {
        let (n, owned) = (tags.len(), entries.iter().filter(|e| e.own.is_some()).count());
        info!("tags in force: {n} cgroups ({owned} with their own tag)");
    }
    Ok(Applied { tags, entries, changed })
}

/// The policy's `tags_gen` (.bss), which every task compares with its own
/// copy when it is enqueued: bumped after the tags map changed (the loop
/// does, when the tags worker hands it an application that changed the
/// map). A handle the agent's loop holds for as long as the skeleton is
/// loaded; only that loop writes the word, BPF only reads it.
#[derive(Clone, Copy)]
pub struct TagsGen<'a> {
    word: NonNull<u64>,
    _skel: PhantomData<&'a mut u64>,
}

impl<'a> TagsGen<'a> {
    /// # Safety
    /// `word` must stay valid for writes for `'a` (the mmapped .bss of a
    /// loaded skeleton), and nothing else may write it meanwhile.
    pub unsafe fn new(word: NonNull<u64>) -> Self {
        Self { word, _skel: PhantomData }
    }

    /// Tell the tasks that the tags changed (BPF reads the word at any time:
    /// volatile, never cached in a register).
    pub fn bump(self) {
        // SAFETY: valid for writes and written only through this handle (new()).
        unsafe { self.word.write_volatile(self.word.read_volatile().wrapping_add(1)) };
    }
}

/// Log a failed application without stopping the agent: the map keeps
/// what was last written.
pub fn warn_failed(e: &anyhow::Error) {
    warn!("applying tags: {e:#}; the tags last applied stay in force");
}
