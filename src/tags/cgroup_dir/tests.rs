//! Resolution beneath the tree's root, on an ordinary directory (the
//! filesystem check is a parameter; cgroupfs itself is the VM tests'):
//! symlinks and `..` never lead out, and what was opened is what is written.

use super::*;
use std::os::unix::fs::{symlink, MetadataExt};

/// A fresh directory with `tree/a/b`, `outside/`, a file `tree/f` and links
/// in the tree: `abs` -> outside (absolute), `rel` -> ../outside, `inner` -> a.
fn fixture(name: &str) -> (PathBuf, Tree) {
    let base = std::env::temp_dir().join(format!("chameleon-cgdir-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let tree = base.join("tree");
    std::fs::create_dir_all(tree.join("a/b")).unwrap();
    std::fs::create_dir_all(base.join("outside")).unwrap();
    std::fs::write(tree.join("f"), "").unwrap();
    symlink(base.join("outside"), tree.join("abs")).unwrap();
    symlink("../outside", tree.join("rel")).unwrap();
    symlink("a", tree.join("inner")).unwrap();
    let t = Tree::open(&tree, None).unwrap();
    (base, t)
}

fn refused(t: &Tree, p: &str) -> String {
    match t.resolve(Path::new(p)) {
        Ok(d) => panic!("{p}: resolved to {} (inode {})", d.path.display(), d.id()),
        Err(e) => format!("{e:#}"),
    }
}

#[test]
fn paths_inside_the_tree_resolve_to_their_directory() {
    let (base, t) = fixture("inside");
    let ino = |p: &str| std::fs::metadata(base.join("tree").join(p)).unwrap().ino();
    let d = t.resolve(Path::new("a/b")).unwrap();
    assert_eq!((d.id(), d.path.clone(), d.is_root()), (ino("a/b"), base.join("tree/a/b"), false));
    assert_eq!(t.resolve(&base.join("tree/a")).unwrap().id(), ino("a"), "absolute, under the tree");
    assert_eq!(t.resolve(Path::new("a/b/../b")).unwrap().id(), ino("a/b"), "`..` that stays inside");
    for root in ["", ".", "a/..", "a/b/../.."] {
        assert!(t.resolve(Path::new(root)).unwrap().is_root(), "{root:?} is the root");
    }
    assert!(t.resolve(&base.join("tree")).unwrap().is_root());
    assert_eq!(t.child(t.root(), OsStr::new("a")).unwrap().id(), ino("a"));
    assert_eq!(t.root().children().unwrap(), vec![OsString::from("a")], "links and files are not children");
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn symlinks_are_never_followed() {
    let (base, t) = fixture("links");
    for p in ["abs", "rel", "inner", "inner/b", "abs/x"] {
        let e = refused(&t, p);
        assert!(e.contains("a symbolic link on the path"), "{p}: {e}");
        assert!(e.starts_with(&format!("cgroup {}: ", base.join("tree").join(p).display())), "{p}: {e}");
    }
    // By name from a listing too.
    assert!(format!("{:#}", t.child(t.root(), OsStr::new("abs")).err().unwrap()).contains("a symbolic link"));
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn dot_dot_and_outside_paths_are_refused() {
    let (base, t) = fixture("dotdot");
    for p in ["..", "../outside", "a/../../outside", "a/b/../../../tree/a"] {
        let e = refused(&t, p);
        assert!(e.contains(&format!("leaves {}", base.join("tree").display())), "{p}: {e}");
    }
    let outside = base.join("outside");
    let e = refused(&t, outside.to_str().unwrap());
    assert!(e.contains(&format!("not under {}", base.join("tree").display())), "{e}");
    // Lexically under the tree's path, by name only: still resolved beneath it.
    let e = refused(&t, base.join("tree/../outside").to_str().unwrap());
    assert!(e.contains("leaves"), "{e}");
    assert!(refused(&t, "nope").ends_with(": no such cgroup"));
    assert!(refused(&t, "f").ends_with(": not a directory"));
    assert!(format!("{:#}", t.child(t.root(), OsStr::new("..")).err().unwrap()).contains("is not a child's name"));
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn the_filesystem_is_checked_on_the_open_directory() {
    let (base, _) = fixture("fs");
    let e = format!("{:#}", Tree::open(&base.join("tree"), Some(CGROUP2_SUPER_MAGIC)).err().unwrap());
    assert_eq!(e, format!("cgroup {}: not on a cgroup v2 mount (cgroup v1 and other filesystems cannot be tagged)", base.join("tree").display()));
    let here = fstatfs(File::open(&base).unwrap().as_fd()).unwrap().filesystem_type();
    let t = Tree::open(&base.join("tree"), Some(here)).unwrap();
    t.resolve(Path::new("a/b")).unwrap();
    std::fs::remove_dir_all(&base).unwrap();
}

/// The race the fd closes: the directory checked is swapped for a link to
/// elsewhere before the write. The write lands on what was opened.
#[test]
fn what_was_opened_is_what_is_written() {
    let (base, t) = fixture("swap");
    let d = t.resolve(Path::new("a/b")).unwrap();
    std::fs::rename(base.join("tree/a/b"), base.join("tree/a/moved")).unwrap();
    symlink(base.join("outside"), base.join("tree/a/b")).unwrap();
    match d.set_xattr("user.chameleon.test", b"x") {
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => eprintln!("no user xattrs here: write not checked"),
        r => {
            r.unwrap();
            assert_eq!(xattr::get(base.join("tree/a/moved"), "user.chameleon.test").unwrap().as_deref(), Some(&b"x"[..]));
            assert_eq!(xattr::get(base.join("outside"), "user.chameleon.test").unwrap(), None, "written through the link");
            assert_eq!(d.get_xattr("user.chameleon.test").unwrap().as_deref(), Some(&b"x"[..]));
            d.remove_xattr("user.chameleon.test").unwrap();
            assert_eq!(d.get_xattr("user.chameleon.test").unwrap(), None);
        }
    }
    std::fs::remove_dir_all(&base).unwrap();
}
