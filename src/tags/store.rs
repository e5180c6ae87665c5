//! Where tags persist: the cgroup's own `trusted.chameleon.tag` extended
//! attribute. Only CAP_SYS_ADMIN may read or write `trusted.` attributes, so
//! a stored tag is one root wrote: the owner of a delegated cgroup can write
//! `user.` attributes on it (cgroup v2 allows them since Linux 5.7) and could
//! otherwise grant itself any level and weight. A `user.chameleon.tag` (what
//! the first version stored) is ignored with a warning.
//!
//! Why the cgroup and not a state file: the tag travels with the cgroup and
//! dies with it (a removed cgroup's tag is dropped by the kernel, no stale
//! entries to reconcile), any tool can read it (`getfattr -n
//! user.chameleon.tag`), and it survives agent restarts; a file would need
//! its own locking and garbage collection. It does not survive a reboot —
//! neither does the cgroup it describes: the rules file (rules.rs) does.

use crate::tags::rules::{Facts, RuleSet};
use crate::tags::tag::{cgroup_id, Props, CGROUP_ROOT};
use crate::tags::source::{decide, Found, Listed, Source};
use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

pub const XATTR: &str = "trusted.chameleon.tag";
/// Where the first version stored tags; anyone owning the cgroup can write it.
pub const UNTRUSTED_XATTR: &str = "user.chameleon.tag";

/// No valid tag is longer (a few fields of a few digits): a longer stored
/// value is refused as such, not decoded.
const MAX_TAG_LEN: usize = 256;

/// The raw value of extended attribute `attr` of `path`, if set.
fn get(path: &Path, attr: &str) -> Result<Option<Vec<u8>>> {
    let v = xattr::get(path, attr).with_context(|| format!("reading the tag of {}", path.display()))?;
    if v.as_ref().is_some_and(|v| v.len() > MAX_TAG_LEN) {
        bail!("the tag stored on {} is longer than any valid tag", path.display());
    }
    Ok(v)
}

/// The tag stored on a cgroup, if any. A stored value that does not decode is
/// an error naming the cgroup and what is wrong, never a missing tag.
pub fn read(path: &Path) -> Result<Option<Props>> {
    if let Some(w) = untrusted(path) {
        tracing::warn!("{w}");
    }
    read_trusted(path)
}

/// Why a `user.chameleon.tag` on `path` is ignored, if it has one.
fn untrusted(path: &Path) -> Option<String> {
    get(path, UNTRUSTED_XATTR).ok().flatten().map(|_| {
        format!("ignoring {UNTRUSTED_XATTR} on {}: anyone owning the cgroup can write it; tag it again as root", path.display())
    })
}

fn read_trusted(path: &Path) -> Result<Option<Props>> {
    let Some(raw) = get(path, XATTR)? else { return Ok(None) };
    let text = std::str::from_utf8(&raw).with_context(|| format!("the tag stored on {} is not UTF-8", path.display()))?;
    Props::decode(text).map(Some).with_context(|| format!("the tag stored on {} ({text:?})", path.display()))
}

/// Refuse the root cgroup: every task on the machine would inherit its tag.
pub fn refuse_root(path: &Path) -> Result<()> {
    let root = std::fs::canonicalize(root()).unwrap_or_else(|_| root().to_path_buf());
    let this = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if this == root {
        bail!("cgroup {}: the root cgroup cannot be tagged (every task would inherit it); tag a child cgroup", path.display());
    }
    Ok(())
}

/// Store a tag on a cgroup (it must be a cgroup v2 directory, not the root).
pub fn write(path: &Path, props: &Props) -> Result<()> {
    cgroup_id(path)?;
    refuse_root(path)?;
    if let Err(e) = xattr::set(path, XATTR, props.encode().as_bytes()) {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            bail!("tagging {}: {e} (tagging needs root)", path.display());
        }
        return Err(e).with_context(|| format!("tagging {}", path.display()));
    }
    Ok(())
}

/// Remove a cgroup's tag. Returns whether it had one.
pub fn remove(path: &Path) -> Result<bool> {
    cgroup_id(path)?;
    match xattr::remove(path, XATTR) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENODATA) => Ok(false),
        Err(e) => Err(e).with_context(|| format!("untagging {}", path.display())),
    }
}

/// One cgroup with its own tag (if any), the tag in force (its own, else
/// the nearest tagged ancestor's) and where that comes from
/// (`tag_source::decide`: `--tag`, stored, a rule, inherited). A cgroup
/// whose stored tag cannot be read carries the reason in `error` and has no
/// tag in force, nor do its descendants without their own: a damaged tag is
/// reported, never silently replaced by a rule's or the parent's.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub path: PathBuf,
    pub id: u64,
    pub own: Option<Props>,
    pub effective: Option<Props>,
    pub error: Option<String>,
    pub source: Option<Source>,
    /// What the agent should log about it (once: scans repeat every second).
    pub warnings: Vec<String>,
}

impl Entry {
    /// Its line in `scx_chameleon tags`, if it has a tag (or a damaged one).
    pub fn listed(&self) -> Option<Listed> {
        Some(Listed { path: self.path.clone(), id: self.id, tag: self.effective.map(|p| p.encode()), source: self.source.clone()? })
    }
}

/// Every cgroup under `root`, parents before children, with own and
/// effective tags. `extra` (the start-up `--tag`s) beat stored tags, which
/// beat `rules` (the first rule matching the cgroup's path and processes).
pub fn scan(root: &Path, extra: &[(PathBuf, Props)], rules: Option<&RuleSet>, matches: &mut RuleMatches) -> Result<Vec<Entry>> {
    let rules = rules.filter(|r| !r.is_empty());
    let fresh = matches.fresh;
    let mut seen = RuleMatches::default();
    let procs = rules.is_some_and(|r| r.needs_procs());
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), None::<(Props, PathBuf)>)];
    while let Some((dir, inherited)) = stack.pop() {
        let Ok(id) = cgroup_id(&dir) else { continue };
        let flag = extra.iter().find(|(p, _)| p == &dir).map(|(_, p)| *p);
        // Read only what can still decide: a --tag needs no stored tag, a
        // stored one no rule (and no /proc reads).
        let mut warnings: Vec<String> = untrusted(&dir).into_iter().collect();
        let stored = match flag {
            Some(_) => Ok(None),
            None => read_trusted(&dir).map_err(|e| {
                warnings.push(format!("{e:#}; the cgroup gets no tag until it is tagged again"));
                format!("{e:#}")
            }),
        };
        let rule = match (rules, flag, &stored) {
            // The root is never tagged: every task would inherit it.
            (Some(rules), None, Ok(None)) if dir != root => {
                let known = (!fresh).then(|| matches.by_cgroup.get(&id).cloned()).flatten();
                let m = known.unwrap_or_else(|| {
                    let rel = dir.strip_prefix(root).unwrap_or(&dir);
                    let (comms, uids) = if procs { crate::tags::cgroup_procs::read(&dir) } else { Default::default() };
                    let facts = Facts { path: format!("/{}", rel.display()), comms, uids };
                    rules.first_match(&facts).map(|r| (r.props, rules.source(r)))
                });
                seen.by_cgroup.insert(id, m.clone());
                m
            }
            _ => None,
        };
        let error = stored.as_ref().err().cloned();
        let d = decide(Found { flag, stored, rule, inherited: inherited.clone() });
        // Descendants inherit the tag in force here, from whoever owns it.
        let pass = match (d.own, d.effective) {
            (Some(p), _) => Some((p, dir.clone())),
            (None, Some(p)) => inherited.map(|(_, from)| (p, from)),
            (None, None) => None,
        };
        let Ok(children) = std::fs::read_dir(&dir) else { continue };
        let mut kids: Vec<PathBuf> =
            children.filter_map(|e| e.ok()).filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect();
        kids.sort();
        for k in kids.into_iter().rev() {
            stack.push((k, pass.clone()));
        }
        out.push(Entry { path: dir, id, own: d.own, effective: d.effective, error, source: d.source, warnings });
    }
    *matches = seen;
    Ok(out)
}

/// What the rules matched per cgroup at the last scan. Matching a rule on
/// comm or uid reads /proc of every process of the cgroup: seconds over
/// thousands of processes. A scan made for a request (a stored tag changed)
/// takes the last matches of the cgroups it knows, reading only new ones;
/// the periodic scans (`fresh`) match everything again, so a process that
/// moved in or renamed itself is seen within one period.
#[derive(Debug, Default)]
pub struct RuleMatches {
    by_cgroup: std::collections::HashMap<u64, Option<(Props, Source)>>,
    /// Match every cgroup again at the next scan.
    pub fresh: bool,
}

/// The default root of the scan.
pub fn root() -> &'static Path {
    Path::new(CGROUP_ROOT)
}
