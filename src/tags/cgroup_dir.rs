//! Cgroup directories opened so that what is checked is what is written.
//!
//! A path the user gives (`scx_chameleon tag seq`, `untag /sys/fs/cgroup/db`)
//! is resolved beneath a directory fd of the cgroup mount's root by
//! openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
//! RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV: no symlink is followed, no `..`
//! or absolute path leaves the tree, no other mount is entered. Everything
//! after that — the filesystem check (fstatfs), the id and the owner
//! (fstat), the tag itself (fgetxattr, fsetxattr, fremovexattr) — is done on
//! the fd that was opened, never on the path again, so a path swapped for a
//! symlink between two steps cannot redirect a write elsewhere.
//!
//! The tags scan walks the tree the same way: each child is opened beneath
//! its parent's fd by its one-component name, and its owner and its tag are
//! read from that fd.
//!
//! Which filesystem the tree must be on is a parameter of [`Tree::open`]:
//! cgroup v2 for the agent and the CLI ([`Tree::cgroup`]), any for host tests
//! on a temporary directory.

use anyhow::{bail, Context, Result};
use nix::errno::Errno;
use nix::fcntl::{openat2, OFlag, OpenHow, ResolveFlag};
use nix::sys::stat::{fstat, FileStat, Mode};
use nix::sys::statfs::{fstatfs, FsType, CGROUP2_SUPER_MAGIC};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use xattr::FileExt;

/// Where the cgroup v2 hierarchy is mounted.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// A tree of cgroups: its root directory, open, and the filesystem every
/// directory in it must be on.
pub struct Tree {
    root: Dir,
    fs: Option<FsType>,
}

/// One directory of a tree, open (read-only: enough for its xattrs).
pub struct Dir {
    file: File,
    /// For messages and listings: the tree's path joined with the names
    /// this directory was reached by.
    pub path: PathBuf,
    stat: FileStat,
    is_root: bool,
}

/// openat2's flags: a directory, resolved without leaving `dirfd`'s tree.
fn how() -> OpenHow {
    OpenHow::new().flags(OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC).resolve(
        ResolveFlag::RESOLVE_BENEATH
            | ResolveFlag::RESOLVE_NO_SYMLINKS
            | ResolveFlag::RESOLVE_NO_MAGICLINKS
            | ResolveFlag::RESOLVE_NO_XDEV,
    )
}

impl Tree {
    /// The cgroup v2 hierarchy at /sys/fs/cgroup.
    pub fn cgroup() -> Result<Tree> {
        Tree::open(Path::new(CGROUP_ROOT), Some(CGROUP2_SUPER_MAGIC))
    }

    /// The tree rooted at `path` (the root itself is opened as named: it is
    /// the administrator's, not the user's). `fs`: the filesystem its
    /// directories must be on; None accepts any (host tests).
    pub fn open(path: &Path, fs: Option<FsType>) -> Result<Tree> {
        let fd = nix::fcntl::open(path, OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())
            .map_err(|e| anyhow::anyhow!("{}: {}", path.display(), std::io::Error::from(e)))?;
        let tree = Tree { root: Dir::new(fd, path.to_path_buf(), true)?, fs };
        tree.check_fs(&tree.root)?;
        Ok(tree)
    }

    pub fn path(&self) -> &Path {
        &self.root.path
    }

    pub fn root(&self) -> &Dir {
        &self.root
    }

    fn check_fs(&self, dir: &Dir) -> Result<()> {
        let Some(want) = self.fs else { return Ok(()) };
        let fs = fstatfs(dir.file.as_fd()).map_err(|e| anyhow::anyhow!("cgroup {}: {}", dir.path.display(), std::io::Error::from(e)))?;
        if fs.filesystem_type() != want {
            bail!("cgroup {}: not on a cgroup v2 mount (cgroup v1 and other filesystems cannot be tagged)", dir.path.display());
        }
        Ok(())
    }

    /// The directory a user's path names: absolute (it must lie under the
    /// tree's path) or relative to the tree's root. Refused, naming the path
    /// and why: outside the tree, a symlink on the way, `..` above the root,
    /// another mount, not a directory, not on the tree's filesystem.
    pub fn resolve(&self, user: &Path) -> Result<Dir> {
        let rel = if user.is_absolute() {
            user.strip_prefix(self.path()).map_err(|_| {
                anyhow::anyhow!("cgroup {}: not under {} (only its cgroup v2 directories can be tagged)", user.display(), self.path().display())
            })?
        } else {
            user
        };
        let shown = if rel.as_os_str().is_empty() { self.path().to_path_buf() } else { self.path().join(rel) };
        let name = if rel.as_os_str().is_empty() { Path::new(".") } else { rel };
        self.open_beneath(&self.root, name, shown)
    }

    /// The child `name` (one component, as listed) of `parent`.
    pub fn child(&self, parent: &Dir, name: &OsStr) -> Result<Dir> {
        if name.is_empty() || name.as_bytes().contains(&b'/') || name == "." || name == ".." {
            bail!("cgroup {}: {:?} is not a child's name", parent.path.display(), name);
        }
        self.open_beneath(parent, Path::new(name), parent.path.join(name))
    }

    fn open_beneath(&self, from: &Dir, name: &Path, shown: PathBuf) -> Result<Dir> {
        let fd = openat2(from.file.as_fd(), name, how()).map_err(|e| {
            let why = match e {
                Errno::ENOENT => "no such cgroup".to_string(),
                Errno::ENOTDIR => "not a directory".to_string(),
                Errno::ELOOP => "a symbolic link on the path (paths are resolved without following links)".to_string(),
                Errno::EXDEV => format!("leaves {} (through `..`, a link or another mount)", self.path().display()),
                Errno::ENOSYS => "openat2 is not available (Linux 5.6 or later is needed)".to_string(),
                e => std::io::Error::from(e).to_string(),
            };
            anyhow::anyhow!("cgroup {}: {why}", shown.display())
        })?;
        let dir = Dir::new(fd, shown, false)?;
        self.check_fs(&dir)?;
        let is_root = dir.same_as(&self.root);
        Ok(Dir { is_root, ..dir })
    }
}

impl Dir {
    fn new(fd: OwnedFd, path: PathBuf, is_root: bool) -> Result<Dir> {
        let stat = fstat(fd.as_fd()).map_err(|e| anyhow::anyhow!("cgroup {}: {}", path.display(), std::io::Error::from(e)))?;
        Ok(Dir { file: File::from(fd), path, stat, is_root })
    }

    /// Its inode number: for a cgroup v2 directory, the cgroup id the
    /// kernel uses (`cgrp->kn->id`, what BPF reads).
    pub fn id(&self) -> u64 {
        self.stat.st_ino
    }

    /// Whether it is the tree's root (by device and inode, however named).
    pub fn is_root(&self) -> bool {
        self.is_root
    }

    fn same_as(&self, other: &Dir) -> bool {
        (self.stat.st_dev, self.stat.st_ino) == (other.stat.st_dev, other.stat.st_ino)
    }

    /// Why someone other than root may create children here, if anyone
    /// may: a delegated cgroup (systemd's `Delegate=`, `user@UID.service`)
    /// is owned by its delegatee, who then names the cgroups below it and
    /// moves its processes among them. Group or world write counts too
    /// (delegation by group); a group of 0 does not.
    pub fn delegation(&self) -> Option<String> {
        let (uid, gid, mode) = (self.stat.st_uid, self.stat.st_gid, self.stat.st_mode);
        if uid != 0 {
            Some(format!("owned by uid {uid}"))
        } else if mode & 0o002 != 0 {
            Some("writable by every user".to_string())
        } else if mode & 0o020 != 0 && gid != 0 {
            Some(format!("writable by group {gid}"))
        } else {
            None
        }
    }

    /// The names of its subdirectories, sorted; entries that vanish or are
    /// not directories are left out.
    pub fn children(&self) -> Result<Vec<OsString>> {
        let mut d = nix::dir::Dir::openat(self.file.as_fd(), ".", OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC, Mode::empty())
            .map_err(|e| anyhow::anyhow!("listing {}: {}", self.path.display(), std::io::Error::from(e)))?;
        let mut out: Vec<OsString> = d
            .iter()
            .filter_map(|e| e.ok())
            .filter(|e| matches!(e.file_type(), Some(nix::dir::Type::Directory) | None))
            .map(|e| OsStr::from_bytes(e.file_name().to_bytes()).to_os_string())
            .filter(|n| n != "." && n != "..")
            .collect();
        out.sort();
        Ok(out)
    }

    /// Extended attribute `attr`, if set. A filesystem without extended
    /// attributes has none.
    pub fn get_xattr(&self, attr: &str) -> std::io::Result<Option<Vec<u8>>> {
        match self.file.get_xattr(attr) {
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => Ok(None),
            r => r,
        }
    }

    pub fn set_xattr(&self, attr: &str, value: &[u8]) -> std::io::Result<()> {
        self.file.set_xattr(attr, value)
    }

    pub fn remove_xattr(&self, attr: &str) -> std::io::Result<()> {
        self.file.remove_xattr(attr)
    }
}

/// The cgroup id of a cgroup given by path (absolute or relative to the
/// cgroup mount), resolved as [`Tree::resolve`] does. Refuses anything that
/// is not a cgroup v2 directory, naming what is wrong.
pub fn cgroup_id(path: &Path) -> Result<u64> {
    Ok(Tree::cgroup().context("the cgroup v2 mount")?.resolve(path)?.id())
}

#[cfg(test)]
mod tests;
