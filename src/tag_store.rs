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
//! neither does the cgroup it describes.

use crate::tag::{cgroup_id, Props, CGROUP_ROOT};
use anyhow::{bail, Context, Result};
use std::ffi::CString;
use std::path::{Path, PathBuf};

pub const XATTR: &str = "trusted.chameleon.tag";
/// Where the first version stored tags; anyone owning the cgroup can write it.
pub const UNTRUSTED_XATTR: &str = "user.chameleon.tag";

fn cpath(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_encoded_bytes()).with_context(|| format!("bad path {}", path.display()))
}

fn name() -> CString {
    CString::new(XATTR).unwrap()
}

/// The raw value of extended attribute `attr` of `path`, if set.
fn get(path: &Path, attr: &str) -> Result<Option<Vec<u8>>> {
    let c = cpath(path)?;
    let a = CString::new(attr).unwrap();
    let mut buf = [0u8; 256];
    // SAFETY: getxattr writes at most buf.len() bytes into buf.
    let n = unsafe { libc::getxattr(c.as_ptr(), a.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENODATA) => Ok(None),
            Some(libc::ERANGE) => bail!("the tag stored on {} is longer than any valid tag", path.display()),
            _ => Err(e).with_context(|| format!("reading the tag of {}", path.display())),
        };
    }
    Ok(Some(buf[..n as usize].to_vec()))
}

/// The tag stored on a cgroup, if any. A stored value that does not decode is
/// an error naming the cgroup and what is wrong, never a missing tag.
pub fn read(path: &Path) -> Result<Option<Props>> {
    if get(path, UNTRUSTED_XATTR).ok().flatten().is_some() {
        tracing::warn!(
            "ignoring {UNTRUSTED_XATTR} on {}: anyone owning the cgroup can write it; tag it again as root",
            path.display()
        );
    }
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
    let c = cpath(path)?;
    let v = props.encode();
    // SAFETY: the value pointer and length describe v's bytes.
    let r = unsafe { libc::setxattr(c.as_ptr(), name().as_ptr(), v.as_ptr().cast(), v.len(), 0) };
    if r != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EPERM) || e.raw_os_error() == Some(libc::EACCES) {
            bail!("tagging {}: {e} (tagging needs root)", path.display());
        }
        return Err(e).with_context(|| format!("tagging {}", path.display()));
    }
    Ok(())
}

/// Remove a cgroup's tag. Returns whether it had one.
pub fn remove(path: &Path) -> Result<bool> {
    cgroup_id(path)?;
    let c = cpath(path)?;
    // SAFETY: both are valid C strings.
    if unsafe { libc::removexattr(c.as_ptr(), name().as_ptr()) } != 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENODATA) => Ok(false),
            _ => Err(e).with_context(|| format!("untagging {}", path.display())),
        };
    }
    Ok(true)
}

/// One cgroup with its own tag (if any) and the tag in force (its own, else
/// the nearest tagged ancestor's). A cgroup whose stored tag cannot be read
/// carries the reason in `error` and has no tag in force, nor do its
/// descendants without their own: a damaged tag is reported, never silently
/// replaced by the parent's.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub path: PathBuf,
    pub id: u64,
    pub own: Option<Props>,
    pub effective: Option<Props>,
    pub error: Option<String>,
}

/// Every cgroup under `root`, parents before children, with own and
/// effective tags. `extra` (the start-up `--tag`s) counts as own tags.
pub fn scan(root: &Path, extra: &[(PathBuf, Props)]) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), None::<Props>)];
    while let Some((dir, inherited)) = stack.pop() {
        let Ok(id) = cgroup_id(&dir) else { continue };
        let (own, error) = match extra.iter().find(|(p, _)| p == &dir) {
            Some((_, p)) => (Some(*p), None),
            None => match read(&dir) {
                Ok(own) => (own, None),
                Err(e) => {
                    tracing::warn!("{e:#}; the cgroup gets no tag until it is tagged again");
                    (None, Some(format!("{e:#}")))
                }
            },
        };
        let effective = if error.is_some() { None } else { own.or(inherited) };
        let Ok(children) = std::fs::read_dir(&dir) else { continue };
        let mut kids: Vec<PathBuf> =
            children.filter_map(|e| e.ok()).filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect();
        kids.sort();
        for k in kids.into_iter().rev() {
            stack.push((k, effective));
        }
        out.push(Entry { path: dir, id, own, effective, error });
    }
    Ok(out)
}

/// The default root of the scan.
pub fn root() -> &'static Path {
    Path::new(CGROUP_ROOT)
}
