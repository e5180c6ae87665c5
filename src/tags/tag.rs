//! Cgroup tags: "tasks of this cgroup want an execution object of level L,
//! weight W, tax T, SMT class C, priority P" (Chameleon §4.3.4; bi-modal
//! SMT; AASH's high-priority class), parsed and
//! validated in one place for `--tag CGROUP=level:L,...`, `scx_chameleon tag`
//! and the tag store. Every error names the field and its allowed range.

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};

use crate::bpf_intf::chameleon_consts_CHAMELEON_OBJ_MAX_LEVEL as MAX_LEVEL;

pub use crate::tags::cgroup_dir::{cgroup_id, CGROUP_ROOT};
/// Tax is fixed point in hundredths: 1 = 0.01, 100 = 1.00, 10000 = 100.
pub const TAX_ONE: u32 = 100;
/// `tax=auto`: each task's tax is set from its measured speed-up
/// (auto_tax.rs). Kept as 0, which no fixed tax can be, in `Props.tax` and
/// in the BPF tag (the policy never reads a tag's tax: it charges the
/// assignment's, which the agent always fills with 1..=10000). Tags stored
/// before it decode as they did.
pub const TAX_AUTO: u32 = 0;

/// SMT class (bi-modal SMT scheduler): `uni` runs with its sibling idle (an
/// SMT pair object, Chameleon §5.5), `smt` shares its core (never fuses),
/// `kwork` keeps its core's user work on one thread and its kernel work
/// (device IRQs, kthreads) on the other (the bi-modal paper's AMP mode),
/// `any` follows the level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Smt {
    #[default]
    Any,
    Uni,
    Smt,
    Kwork,
}

impl Smt {
    pub fn parse(s: &str) -> Result<Smt> {
        match s {
            "any" => Ok(Smt::Any),
            "uni" => Ok(Smt::Uni),
            "kwork" => Ok(Smt::Kwork),
            "smt" => Ok(Smt::Smt),
            _ => bail!("smt {s:?}: expected uni, smt, kwork or any"),
        }
    }

    /// The BPF value (enum chameleon_smt).
    pub fn raw(self) -> u32 {
        match self {
            Smt::Any => crate::bpf_intf::chameleon_smt_CHAMELEON_SMT_ANY,
            Smt::Uni => crate::bpf_intf::chameleon_smt_CHAMELEON_SMT_UNI,
            Smt::Kwork => crate::bpf_intf::chameleon_smt_CHAMELEON_SMT_KWORK,
            Smt::Smt => crate::bpf_intf::chameleon_smt_CHAMELEON_SMT_SMT,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Smt::Any => "any",
            Smt::Uni => "uni",
            Smt::Kwork => "kwork",
            Smt::Smt => "smt",
        }
    }
}

/// Class on contended fast contexts (AASH §2.3): `high` is served first,
/// sharing among its own; `normal` shares what is left.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Prio {
    #[default]
    Normal,
    High,
}

impl Prio {
    pub fn parse(s: &str) -> Result<Prio> {
        match s {
            "normal" => Ok(Prio::Normal),
            "high" => Ok(Prio::High),
            _ => bail!("prio {s:?}: expected high or normal"),
        }
    }

    /// The BPF value (enum chameleon_prio).
    pub fn raw(self) -> u32 {
        match self {
            Prio::Normal => crate::bpf_intf::chameleon_prio_CHAMELEON_PRIO_NORMAL,
            Prio::High => crate::bpf_intf::chameleon_prio_CHAMELEON_PRIO_HIGH,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Prio::Normal => "normal",
            Prio::High => "high",
        }
    }
}

/// What a tag asks for. Every property is optional; defaults: level 1, tax 1,
/// smt any, prio normal, and the weight of the cgroup's `cpu.weight` (see
/// [`claim`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Props {
    pub level: u32,
    /// 1..=10000, or 0: not given, the cgroup's `cpu.weight` decides.
    pub weight: u32,
    /// Hundredths (see [`TAX_ONE`]), or [`TAX_AUTO`].
    pub tax: u32,
    pub smt: Smt,
    pub prio: Prio,
}

impl Default for Props {
    fn default() -> Self {
        Props { level: 1, weight: 0, tax: TAX_ONE, smt: Smt::Any, prio: Prio::Normal }
    }
}

impl Props {
    /// The BPF map value.
    pub fn to_bpf(&self) -> crate::bpf_intf::chameleon_tag {
        crate::bpf_intf::chameleon_tag {
            level: self.level,
            weight: self.weight,
            tax: self.tax,
            smt: self.smt.raw(),
            prio: self.prio.raw(),
        }
    }

    /// Back from a BPF map value, validated like any other input.
    pub fn from_bpf(t: &crate::bpf_intf::chameleon_tag) -> Result<Props> {
        let smt = match t.smt {
            crate::bpf_intf::chameleon_smt_CHAMELEON_SMT_ANY => Smt::Any,
            crate::bpf_intf::chameleon_smt_CHAMELEON_SMT_UNI => Smt::Uni,
            crate::bpf_intf::chameleon_smt_CHAMELEON_SMT_KWORK => Smt::Kwork,
            crate::bpf_intf::chameleon_smt_CHAMELEON_SMT_SMT => Smt::Smt,
            other => bail!("smt {other}: not a known SMT class"),
        };
        let prio = match t.prio {
            crate::bpf_intf::chameleon_prio_CHAMELEON_PRIO_NORMAL => Prio::Normal,
            crate::bpf_intf::chameleon_prio_CHAMELEON_PRIO_HIGH => Prio::High,
            other => bail!("prio {other}: not a known priority"),
        };
        if t.tax != TAX_AUTO && !(1..=10_000).contains(&t.tax) {
            bail!("tax {}: out of range", t.tax);
        }
        Ok(Props { level: parse_level(&t.level.to_string())?, weight: match t.weight {
                0 => 0,
                w => parse_weight(&w.to_string())?,
            },
            tax: t.tax,
            smt,
            prio,
        })
    }

    /// Its tax is set per task from the measured speed-up (`tax=auto`).
    pub fn auto_tax(&self) -> bool {
        self.tax == TAX_AUTO
    }

    /// The stored form (cgroup xattr), versioned: "v1 level=2 weight=3 tax=1.00 smt=any".
    /// Without a weight of its own, none is stored (agents before cpu.weight
    /// read that as weight 1, the claim of cpu.weight 100); an automatic tax
    /// is "tax=auto" (agents before it report such a tag damaged and apply
    /// none, rather than guess a tax); `prio=high` only when high, so that a
    /// normal tag reads the same to agents before prio.
    pub fn encode(&self) -> String {
        let weight = if self.weight > 0 { format!(" weight={}", self.weight) } else { String::new() };
        let prio = if self.prio == Prio::High { " prio=high" } else { "" };
        format!("v1 level={}{weight} tax={} smt={}{prio}", self.level, tax_text(self.tax), self.smt.name())
    }

    /// Read the stored form back, validating every field.
    pub fn decode(s: &str) -> Result<Props> {
        let mut words = s.split_whitespace();
        match words.next() {
            Some("v1") => {}
            other => bail!("stored tag {s:?}: unknown format {:?} (expected v1)", other.unwrap_or("")),
        }
        let mut p = Props::default();
        for w in words {
            let (k, v) = w.split_once('=').with_context(|| format!("stored tag {s:?}: {w:?} is not key=value"))?;
            p.set(k, v)?;
        }
        Ok(p)
    }

    /// Set one property from text, with the field's own validation.
    pub fn set(&mut self, key: &str, value: &str) -> Result<()> {
        let v = value.trim();
        match key.trim() {
            "level" => self.level = parse_level(v)?,
            "weight" => self.weight = parse_weight(v)?,
            "tax" if v == "auto" => self.tax = TAX_AUTO,
            "tax" => {
                self.tax = parse_tax(v).map_err(|_| {
                    anyhow::anyhow!("tax {v:?}: expected a number from 0.01 to 100 with at most two decimals, or auto")
                })?
            }
            "smt" => self.smt = Smt::parse(v)?,
            "prio" => self.prio = Prio::parse(v)?,
            other => bail!("unknown property {other:?}: expected level, weight, tax, smt or prio"),
        }
        Ok(())
    }
}

/// Value parsers for `scx_chameleon tag --level/--weight/--tax/--smt/--prio`:
/// clap refuses a bad value with the same message `Props::set` gives (a
/// rule, `--tag`), before anything is read or written.
pub mod arg {
    use super::{Prio, Props, Smt};

    fn one<T>(key: &str, v: &str, get: impl Fn(&Props) -> T) -> Result<T, String> {
        let mut p = Props::default();
        p.set(key, v).map(|_| get(&p)).map_err(|e| format!("{e:#}"))
    }
    pub fn level(v: &str) -> Result<u32, String> {
        one("level", v, |p| p.level)
    }
    pub fn weight(v: &str) -> Result<u32, String> {
        one("weight", v, |p| p.weight)
    }
    /// Hundredths, or TAX_AUTO for "auto".
    pub fn tax(v: &str) -> Result<u32, String> {
        one("tax", v, |p| p.tax)
    }
    pub fn smt(v: &str) -> Result<Smt, String> {
        one("smt", v, |p| p.smt)
    }
    pub fn prio(v: &str) -> Result<Prio, String> {
        one("prio", v, |p| p.prio)
    }
}

pub fn parse_level(v: &str) -> Result<u32> {
    v.parse()
        .ok()
        .filter(|l| (1..=MAX_LEVEL).contains(l))
        .with_context(|| format!("level {v:?}: expected an integer 1..={MAX_LEVEL} (object of 2^level CPUs)"))
}

pub fn parse_weight(v: &str) -> Result<u32> {
    v.parse()
        .ok()
        .filter(|w| (1..=10_000).contains(w))
        .with_context(|| format!("weight {v:?}: expected an integer 1..=10000"))
}

/// A requester's claim on contended CPUs, in `cpu.weight` units (100 for
/// a default cgroup): a tag's own weight W claims as much as `cpu.weight`
/// W * 100, a tag without one claims its cgroup's `cpu.weight`
/// (`cpu_weight`, None: no cpu controller there, 100), so that systemd's
/// `CPUWeight=` orders objects as it orders CPU time.
pub fn claim(weight: u32, cpu_weight: Option<u32>) -> u32 {
    if weight > 0 {
        weight.saturating_mul(100)
    } else {
        cpu_weight.filter(|w| (1..=10_000).contains(w)).unwrap_or(100)
    }
}

/// A tag on one cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tag {
    pub path: PathBuf,
    pub props: Props,
}

/// A tax as people write it: "1.00", "0.01", "auto".
pub fn tax_text(tax: u32) -> String {
    if tax == TAX_AUTO {
        "auto".into()
    } else {
        format!("{}.{:02}", tax / 100, tax % 100)
    }
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

/// Parse the `level:L,weight:W,tax:T,smt:C,prio:P` part.
pub fn parse_props(s: &str) -> Result<Props> {
    let mut p = Props::default();
    for item in s.split(',').filter(|i| !i.is_empty()) {
        let (k, v) = item
            .split_once(':')
            .with_context(|| format!("{item:?}: expected key:value (level, weight, tax, smt or prio)"))?;
        p.set(k, v)?;
    }
    Ok(p)
}

/// A cgroup path as users give it: absolute, or relative to the cgroup mount.
pub fn cgroup_path(cg: &str) -> PathBuf {
    let path = Path::new(cg);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        Path::new(CGROUP_ROOT).join(path)
    }
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
    let props = parse_props(props).with_context(|| format!("tag {s:?}"))?;
    let path = cgroup_path(cg);
    if path.components().eq(Path::new(CGROUP_ROOT).components()) {
        bail!("tag {s:?}: the root cgroup cannot be tagged (every task would inherit it); tag a child cgroup");
    }
    Ok(Tag { path, props })
}

#[cfg(test)]
mod tests;
