//! Cgroup tags: "tasks of this cgroup want an execution object of level L,
//! weight W, tax T" (Chameleon §4.3.4), parsed from `--tag CGROUP=level:L,weight:W,tax:T`.

use anyhow::{bail, Context, Result};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::bpf_intf::chameleon_consts_CHAMELEON_OBJ_MAX_LEVEL as MAX_LEVEL;

pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// Tax is fixed point in hundredths: 1 = 0.01, 100 = 1.00, 10000 = 100.
pub const TAX_ONE: u32 = 100;

/// What a tag asks for. Every property is optional; defaults: level 1, weight 1, tax 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Props {
    pub level: u32,
    pub weight: u32,
    /// Hundredths (see [`TAX_ONE`]).
    pub tax: u32,
}

impl Default for Props {
    fn default() -> Self {
        Props { level: 1, weight: 1, tax: TAX_ONE }
    }
}

/// A tag on one cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub path: PathBuf,
    pub props: Props,
}

/// Parse a tax given as a decimal (0.01 ..= 100, at most two decimals) into hundredths.
pub fn parse_tax(s: &str) -> Result<u32> {
    let bad = || format!("tax {s:?}: expected a number from 0.01 to 100 with at most two decimals");
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty() && frac.is_empty() || frac.len() > 2 {
        bail!(bad());
    }
    let digits = |d: &str| d.is_empty() || d.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || !digits(frac) || int.len() > 5 {
        bail!(bad());
    }
    let int: u32 = if int.is_empty() { 0 } else { int.parse().with_context(bad)? };
    let frac: u32 = format!("{frac:0<2}").parse().with_context(bad)?;
    let tax = int * 100 + frac;
    if !(1..=10_000).contains(&tax) {
        bail!(bad());
    }
    Ok(tax)
}

/// Parse the `level:L,weight:W,tax:T` part.
pub fn parse_props(s: &str) -> Result<Props> {
    let mut p = Props::default();
    for item in s.split(',').filter(|i| !i.is_empty()) {
        let (k, v) = item
            .split_once(':')
            .with_context(|| format!("{item:?}: expected key:value (level, weight or tax)"))?;
        match k.trim() {
            "level" => {
                p.level = v.trim().parse().ok().filter(|l| (1..=MAX_LEVEL).contains(l)).with_context(
                    || format!("level {v:?}: expected 1..={MAX_LEVEL} (object of 2^level CPUs)"),
                )?
            }
            "weight" => {
                p.weight = v
                    .trim()
                    .parse()
                    .ok()
                    .filter(|w| (1..=10_000).contains(w))
                    .with_context(|| format!("weight {v:?}: expected 1..=10000"))?
            }
            "tax" => p.tax = parse_tax(v.trim())?,
            other => bail!("unknown property {other:?}: expected level, weight or tax"),
        }
    }
    Ok(p)
}

/// Parse `CGROUP=level:L,weight:W,tax:T`. CGROUP is a path under /sys/fs/cgroup
/// (absolute, or relative to it).
pub fn parse_tag(s: &str) -> Result<Tag> {
    let (cg, props) = s
        .split_once('=')
        .with_context(|| format!("tag {s:?}: expected CGROUP=level:L,weight:W,tax:T"))?;
    if cg.is_empty() {
        bail!("tag {s:?}: empty cgroup path");
    }
    let path = Path::new(cg);
    let path = if path.is_absolute() { path.to_path_buf() } else { Path::new(CGROUP_ROOT).join(path) };
    let props = parse_props(props).with_context(|| format!("tag {s:?}"))?;
    Ok(Tag { path, props })
}

/// The cgroup id the kernel uses for a cgroup2 directory: its inode number
/// (what BPF reads as `cgrp->kn->id`).
pub fn cgroup_id(path: &Path) -> Result<u64> {
    let md = std::fs::metadata(path).with_context(|| format!("cgroup {}", path.display()))?;
    if !md.is_dir() {
        bail!("cgroup {}: not a directory", path.display());
    }
    if !path.join("cgroup.procs").exists() {
        bail!("{}: not a cgroup2 directory (no cgroup.procs)", path.display());
    }
    Ok(md.ino())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tax_range_and_precision() {
        assert_eq!(parse_tax("0.01").unwrap(), 1);
        assert_eq!(parse_tax("1").unwrap(), 100);
        assert_eq!(parse_tax("1.5").unwrap(), 150);
        assert_eq!(parse_tax(".25").unwrap(), 25);
        assert_eq!(parse_tax("100").unwrap(), 10_000);
        for bad in ["0", "0.001", "100.01", "1e2", "-1", "", ".", "abc", "1.2.3", "999999"] {
            assert!(parse_tax(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn props_defaults_and_errors() {
        assert_eq!(parse_props("").unwrap(), Props::default());
        let p = parse_props("level:2,weight:3,tax:0.01").unwrap();
        assert_eq!(p, Props { level: 2, weight: 3, tax: 1 });
        assert!(parse_props("level:0").is_err());
        assert!(parse_props("level:4").is_err());
        assert!(parse_props("weight:0").is_err());
        assert!(parse_props("weight:10001").is_err());
        assert!(parse_props("speed:9").is_err());
        assert!(parse_props("level").is_err());
    }

    #[test]
    fn tag_paths() {
        let t = parse_tag("seq=level:1").unwrap();
        assert_eq!(t.path, Path::new("/sys/fs/cgroup/seq"));
        let t = parse_tag("/sys/fs/cgroup/a/b=tax:100").unwrap();
        assert_eq!(t.path, Path::new("/sys/fs/cgroup/a/b"));
        assert_eq!(t.props.tax, 10_000);
        assert!(parse_tag("level:1").is_err());
        assert!(parse_tag("=level:1").is_err());
    }
}
