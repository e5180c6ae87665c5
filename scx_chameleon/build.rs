// The build id `scx_chameleon -V` prints: version, git commit, target, as the
// scx schedulers print theirs. The commit comes from SCX_CHAMELEON_GIT (set by
// scripts/build.sh, which runs git on the host: the toolchain root has none),
// else from .git read directly (a plain `cargo build` in a clone), else it is
// left out (a crate built from a tarball).
use std::path::{Path, PathBuf};

/// The commit HEAD names, read from the repository's files.
fn head_commit(repo: &Path) -> Option<String> {
    let mut git = repo.join(".git");
    // A worktree's .git is a file: "gitdir: PATH".
    if git.is_file() {
        let text = std::fs::read_to_string(&git).ok()?;
        git = PathBuf::from(text.strip_prefix("gitdir:")?.trim());
    }
    println!("cargo:rerun-if-changed={}", git.join("HEAD").display());
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let Some(reference) = head.trim().strip_prefix("ref:") else {
        return Some(head.trim().to_string());
    };
    let reference = reference.trim();
    // Refs shared by worktrees live in the common directory.
    let common = std::fs::read_to_string(git.join("commondir"))
        .map(|c| git.join(c.trim()))
        .unwrap_or_else(|_| git.clone());
    for dir in [&git, &common] {
        if let Ok(sha) = std::fs::read_to_string(dir.join(reference)) {
            println!("cargo:rerun-if-changed={}", dir.join(reference).display());
            return Some(sha.trim().to_string());
        }
    }
    println!("cargo:rerun-if-changed={}", common.join("packed-refs").display());
    let packed = std::fs::read_to_string(common.join("packed-refs")).ok()?;
    packed.lines().find_map(|l| {
        let (sha, name) = l.split_once(' ')?;
        (name == reference).then(|| sha.to_string())
    })
}

fn main() {
    println!("cargo:rerun-if-env-changed=SCX_CHAMELEON_GIT");
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let git = std::env::var("SCX_CHAMELEON_GIT")
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| manifest.parent().and_then(head_commit).map(|s| s.chars().take(12).collect()));
    let version = std::env::var("CARGO_PKG_VERSION").expect("CARGO_PKG_VERSION");
    let target = std::env::var("TARGET").expect("TARGET");
    let profile = if std::env::var("PROFILE").as_deref() == Ok("debug") { "/debug" } else { "" };
    let id = match git {
        Some(g) => format!("{version}-g{g} {target}{profile}"),
        None => format!("{version} {target}{profile}"),
    };
    println!("cargo:rustc-env=CHAMELEON_BUILD_ID={id}");
}
