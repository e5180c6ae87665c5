//! Where tags persist: the cgroup's own `user.chameleon.tag` extended
//! attribute (cgroup v2 supports user xattrs since Linux 5.7).
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

pub const XATTR: &str = "user.chameleon.tag";

fn cpath(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_encoded_bytes()).with_context(|| format!("bad path {}", path.display()))
}

fn name() -> CString {
    CString::new(XATTR).unwrap()
}

/// The tag stored on a cgroup, if any.
pub fn read(path: &Path) -> Result<Option<Props>> {
    let c = cpath(path)?;
    let mut buf = [0u8; 256];
    // SAFETY: getxattr writes at most buf.len() bytes into buf.
    let n = unsafe { libc::getxattr(c.as_ptr(), name().as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENODATA) => Ok(None),
            _ => Err(e).with_context(|| format!("reading the tag of {}", path.display())),
        };
    }
    let text = std::str::from_utf8(&buf[..n as usize]).context("stored tag is not UTF-8")?;
    Props::decode(text).map(Some).with_context(|| format!("tag stored on {}", path.display()))
}

/// Store a tag on a cgroup (it must be a cgroup v2 directory).
pub fn write(path: &Path, props: &Props) -> Result<()> {
    cgroup_id(path)?;
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
/// the nearest tagged ancestor's).
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub path: PathBuf,
    pub id: u64,
    pub own: Option<Props>,
    pub effective: Option<Props>,
}

/// Every cgroup under `root`, parents before children, with own and
/// effective tags. `extra` (the start-up `--tag`s) counts as own tags.
pub fn scan(root: &Path, extra: &[(PathBuf, Props)]) -> Result<Vec<Entry>> {
    let mut out = Vec::new();
    let mut stack = vec![(root.to_path_buf(), None::<Props>)];
    while let Some((dir, inherited)) = stack.pop() {
        let Ok(id) = cgroup_id(&dir) else { continue };
        let own = match extra.iter().find(|(p, _)| p == &dir) {
            Some((_, p)) => Some(*p),
            None => read(&dir).unwrap_or_else(|e| {
                tracing::warn!("{e:#}");
                None
            }),
        };
        let effective = own.or(inherited);
        let Ok(children) = std::fs::read_dir(&dir) else { continue };
        let mut kids: Vec<PathBuf> =
            children.filter_map(|e| e.ok()).filter(|e| e.file_type().is_ok_and(|t| t.is_dir())).map(|e| e.path()).collect();
        kids.sort();
        for k in kids.into_iter().rev() {
            stack.push((k, effective));
        }
        out.push(Entry { path: dir, id, own, effective });
    }
    Ok(out)
}

/// The default root of the scan.
pub fn root() -> &'static Path {
    Path::new(CGROUP_ROOT)
}
