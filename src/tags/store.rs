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

use crate::tags::cgroup_dir::{Dir, Tree, CGROUP_ROOT};
use crate::tags::rules::{Facts, RuleSet};
use crate::tags::source::{decide, Found, Listed, Source};
use crate::tags::tag::Props;
use anyhow::{bail, Context, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::rc::Rc;

pub const XATTR: &str = "trusted.chameleon.tag";
/// Where the first version stored tags; anyone owning the cgroup can write it.
pub const UNTRUSTED_XATTR: &str = "user.chameleon.tag";

/// No valid tag is longer (a few fields of a few digits): a longer stored
/// value is refused as such, not decoded.
const MAX_TAG_LEN: usize = 256;

/// The raw value of extended attribute `attr` of `dir`, if set.
fn get(dir: &Dir, attr: &str) -> Result<Option<Vec<u8>>> {
    let v = dir.get_xattr(attr).with_context(|| format!("reading the tag of {}", dir.path.display()))?;
    if v.as_ref().is_some_and(|v| v.len() > MAX_TAG_LEN) {
        bail!("the tag stored on {} is longer than any valid tag", dir.path.display());
    }
    Ok(v)
}

/// The tag stored on a cgroup, if any. A stored value that does not decode is
/// an error naming the cgroup and what is wrong, never a missing tag.
pub fn read(dir: &Dir) -> Result<Option<Props>> {
    if let Some(w) = untrusted(dir) {
        tracing::warn!("{w}");
    }
    read_trusted(dir)
}

/// Why a `user.chameleon.tag` on `dir` is ignored, if it has one.
fn untrusted(dir: &Dir) -> Option<String> {
    get(dir, UNTRUSTED_XATTR).ok().flatten().map(|_| {
        format!("ignoring {UNTRUSTED_XATTR} on {}: anyone owning the cgroup can write it; tag it again as root", dir.path.display())
    })
}

fn read_trusted(dir: &Dir) -> Result<Option<Props>> {
    let Some(raw) = get(dir, XATTR)? else { return Ok(None) };
    let text = std::str::from_utf8(&raw).with_context(|| format!("the tag stored on {} is not UTF-8", dir.path.display()))?;
    Props::decode(text).map(Some).with_context(|| format!("the tag stored on {} ({text:?})", dir.path.display()))
}

/// Refuse the root cgroup (however it was named): every task on the
/// machine would inherit its tag.
pub fn refuse_root(dir: &Dir) -> Result<()> {
    if dir.is_root() {
        bail!("cgroup {}: the root cgroup cannot be tagged (every task would inherit it); tag a child cgroup", dir.path.display());
    }
    Ok(())
}

/// Store a tag on a cgroup (`Tree::resolve`: a cgroup v2 directory), not the
/// root. Written on the open directory, never by path again.
pub fn write(dir: &Dir, props: &Props) -> Result<()> {
    refuse_root(dir)?;
    if let Err(e) = dir.set_xattr(XATTR, props.encode().as_bytes()) {
        if e.kind() == std::io::ErrorKind::PermissionDenied {
            bail!("tagging {}: {e} (tagging needs root)", dir.path.display());
        }
        return Err(e).with_context(|| format!("tagging {}", dir.path.display()));
    }
    Ok(())
}

/// Remove a cgroup's tag. Returns whether it had one.
pub fn remove(dir: &Dir) -> Result<bool> {
    match dir.remove_xattr(XATTR) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::ENODATA) => Ok(false),
        Err(e) => Err(e).with_context(|| format!("untagging {}", dir.path.display())),
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

/// Every cgroup under the cgroup v2 mount at `root`, parents before
/// children (`scan_tree`). No cgroup v2 hierarchy there: no cgroups.
pub fn scan(root: &Path, extra: &[(PathBuf, Props)], rules: Option<&RuleSet>, matches: &mut RuleMatches) -> Result<Vec<Entry>> {
    match Tree::open(root, Some(nix::sys::statfs::CGROUP2_SUPER_MAGIC)) {
        Ok(tree) => scan_tree(&tree, extra, rules, matches),
        Err(_) => Ok(Vec::new()),
    }
}

/// The delegated cgroup a subtree lies in, and why it is delegated.
type Delegated = Option<Rc<(PathBuf, String)>>;

/// Every cgroup of `tree`, parents before children, with own and effective
/// tags. `extra` (the start-up `--tag`s) beat stored tags, which beat
/// `rules` (the first rule matching the cgroup's path and processes; inside
/// a delegated subtree only rules that say `delegated = true`). Each
/// directory is opened beneath its parent's fd, and its owner and tag are
/// read from it (cgroup_dir.rs).
pub fn scan_tree(tree: &Tree, extra: &[(PathBuf, Props)], rules: Option<&RuleSet>, matches: &mut RuleMatches) -> Result<Vec<Entry>> {
    let rules = rules.filter(|r| !r.is_empty());
    let fresh = matches.fresh;
    let mut seen = RuleMatches::default();
    let procs = rules.is_some_and(|r| r.needs_procs());
    let mut out = Vec::new();
    // Directories still to visit: (parent, name), or None for the root;
    // each holds its parent open until it is visited.
    type Visit = (Option<(Rc<Dir>, OsString)>, Option<(Props, PathBuf)>, Delegated);
    let mut stack: Vec<Visit> = vec![(None, None, None)];
    while let Some((at, inherited, above)) = stack.pop() {
        let opened = match &at {
            None => tree.resolve(Path::new("")),
            Some((parent, name)) => tree.child(parent, name),
        };
        // Gone since it was listed, or no longer a directory: nothing to tag.
        let Ok(dir) = opened else { continue };
        let dir = Rc::new(dir);
        let id = dir.id();
        let delegated: Delegated = match (&above, dir.is_root()) {
            (_, true) => None,
            (Some(d), false) => Some(d.clone()),
            (None, false) => dir.delegation().map(|why| Rc::new((dir.path.clone(), why))),
        };
        let flag = extra.iter().find(|(p, _)| p == &dir.path).map(|(_, p)| *p);
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
            (Some(rules), None, Ok(None)) if !dir.is_root() => {
                let known = (!fresh).then(|| matches.by_cgroup.get(&id).cloned()).flatten();
                let m = known.unwrap_or_else(|| {
                    let rel = dir.path.strip_prefix(tree.path()).unwrap_or(&dir.path);
                    let (comms, uids) = if procs { crate::tags::cgroup_procs::read(&dir.path) } else { Default::default() };
                    let facts = Facts { path: format!("/{}", rel.display()), comms, uids, delegated: delegated.is_some() };
                    match rules.first_match(&facts) {
                        Some(r) => Matched { rule: Some((r.props, rules.source(r))), held_back: None },
                        None => Matched {
                            rule: None,
                            held_back: rules.held_back(&facts).zip(delegated.as_deref()).map(|(r, (at, why))| {
                                format!(
                                    "rule {} ({}:{}) does not apply to {}: it lies in delegated {} ({why}); add delegated = true to the rule to apply it there",
                                    r.label(),
                                    rules.file.display(),
                                    r.line,
                                    dir.path.display(),
                                    at.display()
                                )
                            }),
                        },
                    }
                });
                warnings.extend(m.held_back.clone());
                seen.by_cgroup.insert(id, m.clone());
                m.rule
            }
            _ => None,
        };
        let error = stored.as_ref().err().cloned();
        let d = decide(Found { flag, stored, rule, inherited: inherited.clone() });
        // Descendants inherit the tag in force here, from whoever owns it.
        let pass = match (d.own, d.effective) {
            (Some(p), _) => Some((p, dir.path.clone())),
            (None, Some(p)) => inherited.map(|(_, from)| (p, from)),
            (None, None) => None,
        };
        if let Ok(kids) = dir.children() {
            for k in kids.into_iter().rev() {
                stack.push((Some((dir.clone(), k)), pass.clone(), delegated.clone()));
            }
        }
        out.push(Entry { path: dir.path.clone(), id, own: d.own, effective: d.effective, error, source: d.source, warnings });
    }
    *matches = seen;
    Ok(out)
}

/// What the rules made of one cgroup at a scan.
#[derive(Debug, Clone)]
struct Matched {
    /// The first rule that matched: its tag and source.
    rule: Option<(Props, Source)>,
    /// Why a rule that would match does not (a delegated cgroup), to log.
    held_back: Option<String>,
}

/// What the rules matched per cgroup at the last scan. Matching a rule on
/// comm or uid reads /proc of every process of the cgroup: seconds over
/// thousands of processes. A scan made for a request (a stored tag changed)
/// takes the last matches of the cgroups it knows, reading only new ones;
/// the periodic scans (`fresh`) match everything again, so a process that
/// moved in or renamed itself is seen within one period.
#[derive(Debug, Default)]
pub struct RuleMatches {
    by_cgroup: std::collections::HashMap<u64, Matched>,
    /// Match every cgroup again at the next scan.
    pub fresh: bool,
}

/// The default root of the scan.
pub fn root() -> &'static Path {
    Path::new(CGROUP_ROOT)
}

#[cfg(test)]
mod tests;
