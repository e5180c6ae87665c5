//! The rules file: tags that survive reboots. A stored tag lives on its
//! cgroup (tag_store.rs) and vanishes with it, at every reboot and every
//! restart of a systemd unit; a rule says which cgroups get which tag, by
//! path, unit, slice or by the processes in them, and the agent applies it to
//! each cgroup as it appears (as scx_layered matches tasks to layers).
//!
//! ```toml
//! [[rule]]
//! name = "database"                          # optional, for listings
//! match.cgroup = "/system.slice/postgres*"   # several keys: all must hold
//! level = 2
//! tax = 1.5
//! ```
//!
//! Rules hold only outside delegated subtrees unless they say `delegated =
//! true`. A cgroup is delegated when it, or an ancestor below the root, is
//! owned by a uid other than 0 (or writable by a group other than 0, or by
//! everyone): systemd's `Delegate=` and every `user@UID.service`. The
//! delegatee creates and names the cgroups below it and moves its processes
//! among them, so a path key (`match.unit = "postgres.service"`) would
//! otherwise let any user claim a rule's level and priority with
//! `systemd-run --user -u postgres.service` (at
//! /user.slice/user-1000.slice/user@1000.service/app.slice/postgres.service).
//! A tag inherited from a cgroup outside the subtree still applies: that is
//! the administrator's statement about the whole subtree.
//!
//! `match.unit` and `match.slice` name the cgroup's own (last) component,
//! placed as systemd places units: directly in a slice or at the root.
//! Cgroups below a unit inherit its tag instead of matching themselves, so a
//! later rule can still name one of them, and a cgroup a service made below
//! itself is no unit of that name.
//!
//! A rule by process (`match.comm`, `match.uid`) holds for a cgroup only when
//! every process in it matches: one process that joins a cgroup, or renames
//! itself into a rule's comm, tags nobody else. A comm is the task's own to
//! choose (prctl PR_SET_NAME), so `match.comm` needs an anchor no process can
//! forge: `match.uid`, or a path key naming cgroups only root populates.
//!
//! Everything here is pure: parsing, validation and matching over [`Facts`]
//! (a cgroup's path and its processes' comms and uids), so the host tests
//! need no cgroupfs. Values go through `tag::Props::set`, so a rule accepts
//! exactly what `scx_chameleon tag` and `--tag` accept. Every error names the
//! file, the line and the field: `rules.toml:7: rule "database": level "5":
//! expected an integer 1..=3 ...`.

use crate::tags::tag::Props;
use crate::tags::source::Source;
use anyhow::{bail, Context, Result};
use globset::{GlobBuilder, GlobMatcher};
use regex::Regex;
use serde::Deserialize;
use std::path::{Path, PathBuf};
use toml::{Spanned, Value};

/// The kernel keeps 15 characters of a task's name (TASK_COMM_LEN - 1).
const COMM_MAX: usize = 15;
/// What `match.unit` may end with: systemd units that own cgroups.
const UNIT_KINDS: [&str; 5] = [".service", ".scope", ".socket", ".mount", ".swap"];
const MATCH_KEYS: &str = "match.cgroup, match.cgroup_prefix, match.cgroup_regex, match.unit, match.slice, match.comm or match.uid";

/// The file as written. Every field is a `toml::Value` with its span, so a
/// value of the wrong type gets our message naming the field and its line,
/// not serde's "invalid type".
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    rule: Vec<Spanned<RawRule>>,
}

type Field = Option<Spanned<Value>>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "a rule: a [[rule]] table")]
struct RawRule {
    #[serde(default)]
    name: Field,
    #[serde(default, rename = "match")]
    matcher: Option<Spanned<RawMatch>>,
    #[serde(default)]
    level: Field,
    #[serde(default)]
    weight: Field,
    #[serde(default)]
    tax: Field,
    #[serde(default)]
    smt: Field,
    #[serde(default)]
    prio: Field,
    #[serde(default)]
    delegated: Field,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, expecting = "match: a table of conditions (match.cgroup = \"...\", ...)")]
struct RawMatch {
    #[serde(default)]
    cgroup: Field,
    #[serde(default)]
    cgroup_prefix: Field,
    #[serde(default)]
    cgroup_regex: Field,
    #[serde(default)]
    unit: Field,
    #[serde(default)]
    slice: Field,
    #[serde(default)]
    comm: Field,
    #[serde(default)]
    uid: Field,
}

/// What is known of one cgroup when rules are matched against it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// Relative to the cgroup mount, with a leading slash: "/system.slice/x.service".
    pub path: String,
    /// The names (comm) of the processes in the cgroup itself, each once.
    pub comms: Vec<String>,
    /// Their effective uids, each once. A process counts in both or neither
    /// (cgroup_procs::read), so "every comm matches and every uid is U" is
    /// "every process matches both".
    pub uids: Vec<u32>,
    /// It or an ancestor below the root is delegated (cgroup_dir.rs,
    /// `Dir::delegation`): only rules with `delegated = true` apply.
    pub delegated: bool,
}

/// A glob with the text it came from (for listings and messages).
#[derive(Debug, Clone)]
pub struct Pattern {
    pub text: String,
    glob: GlobMatcher,
}

impl Pattern {
    /// `separator`: whether `*` and `?` stop at '/' (paths: `*` is one
    /// component, `**` any number of them, as in a shell or .gitignore).
    fn new(text: &str, separator: bool) -> Result<Pattern> {
        let glob = GlobBuilder::new(text)
            .literal_separator(separator)
            .build()
            .map_err(|e| anyhow::anyhow!("bad glob {text:?}: {}", e.kind()))?
            .compile_matcher();
        Ok(Pattern { text: text.to_string(), glob })
    }

    pub fn is_match(&self, s: &str) -> bool {
        self.glob.is_match(s)
    }
}

/// The conditions of a rule; every one given must hold.
#[derive(Debug, Clone, Default)]
pub struct Match {
    /// Glob on the whole path.
    pub cgroup: Option<Pattern>,
    /// The path starts with this (string prefix: "/machine.slice/" matches
    /// every cgroup below machine.slice, each on its own).
    pub cgroup_prefix: Option<String>,
    pub cgroup_regex: Option<Regex>,
    /// The cgroup's own name matches this glob, and it sits directly in a
    /// slice or at the root (`systemd_placed`).
    pub unit: Option<Pattern>,
    /// The same for a slice (a name ending `.slice`).
    pub slice: Option<Pattern>,
    /// Every process in the cgroup has a comm matching this glob. Never
    /// alone (RuleSet::parse): a process may take any comm (prctl
    /// PR_SET_NAME), but not another uid, nor a place in a cgroup only
    /// root may write.
    pub comm: Option<Pattern>,
    /// Every process in the cgroup runs as this (effective) uid.
    pub uid: Option<u32>,
}

impl Match {
    pub fn matches(&self, f: &Facts) -> bool {
        let component = |p: &Pattern| systemd_placed(&f.path).is_some_and(|name| p.is_match(name));
        self.cgroup.as_ref().is_none_or(|p| p.is_match(&f.path))
            && self.cgroup_prefix.as_ref().is_none_or(|p| f.path.starts_with(p.as_str()))
            && self.cgroup_regex.as_ref().is_none_or(|r| r.is_match(&f.path))
            && self.unit.as_ref().is_none_or(component)
            && self.slice.as_ref().is_none_or(component)
            && self.comm.as_ref().is_none_or(|p| !f.comms.is_empty() && f.comms.iter().all(|c| p.is_match(c)))
            && self.uid.is_none_or(|u| !f.uids.is_empty() && f.uids.iter().all(|&x| x == u))
    }

    /// Whether matching needs the cgroup's processes (reading them costs a
    /// /proc read per process: done only when some rule asks).
    pub fn needs_procs(&self) -> bool {
        self.comm.is_some() || self.uid.is_some()
    }

    fn has_path(&self) -> bool {
        self.cgroup.is_some()
            || self.cgroup_prefix.is_some()
            || self.cgroup_regex.is_some()
            || self.unit.is_some()
            || self.slice.is_some()
    }

    fn is_empty(&self) -> bool {
        !self.needs_procs() && !self.has_path()
    }
}

/// The last component of `path` if systemd could have placed a unit or a
/// slice there: directly in a slice, or at the root. Nothing below a unit
/// (a service's own sub-cgroups, a user manager's tree below
/// `user@UID.service` outside its slices) qualifies.
fn systemd_placed(path: &str) -> Option<&str> {
    let (parent, name) = path.rsplit_once('/')?;
    let parent_ok = parent.is_empty() || parent.rsplit('/').next().is_some_and(|p| p.ends_with(".slice"));
    (parent_ok && !name.is_empty()).then_some(name)
}

/// One rule, validated.
#[derive(Debug, Clone)]
pub struct Rule {
    pub name: Option<String>,
    /// 1-based position in the file.
    pub index: usize,
    /// Line of the rule's start (its `[[rule]]`).
    pub line: usize,
    pub matcher: Match,
    pub props: Props,
    /// `delegated = true`: it also applies inside delegated subtrees.
    pub delegated: bool,
    /// Line of `level` (or of the rule, when none is given): where a level no
    /// node can form is reported.
    level_line: usize,
}

impl Rule {
    /// `"database"` or `#2` (unnamed: its position).
    pub fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("{n:?}"),
            None => format!("#{}", self.index),
        }
    }
}

/// The rules of one file, in order: the first that matches a cgroup wins.
#[derive(Debug, Clone)]
pub struct RuleSet {
    pub file: PathBuf,
    pub rules: Vec<Rule>,
}

/// Line (1-based) of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    1 + text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count()
}

/// The line where a rule starts: its `[[rule]]` header, the nearest at or
/// before where its table's span begins (which may be its first key); a rule
/// written inline (`rule = [{ ... }]`) has none, its own line is used.
fn rule_line(text: &str, start: usize) -> usize {
    let line = line_of(text, start);
    let lines: Vec<&str> = text.lines().collect();
    (1..=line.min(lines.len())).rev().find(|&l| lines[l - 1].trim_start().starts_with("[[rule]]")).unwrap_or(line)
}

/// A scalar as the text `Props::set` and the tag CLI take.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Integer(i) => Some(i.to_string()),
        // Rust prints the shortest form that reads back: 1.5, 0.01, 100.
        Value::Float(f) => Some(f.to_string()),
        _ => None,
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a number",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a date",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

impl RuleSet {
    /// Read and validate `file`.
    pub fn load(file: &Path) -> Result<RuleSet> {
        let text = std::fs::read_to_string(file).with_context(|| format!("rules file {}", file.display()))?;
        RuleSet::parse(file, &text)
    }

    /// Validate `text`, read from `file` (named in every error).
    pub fn parse(file: &Path, text: &str) -> Result<RuleSet> {
        let at = |span: std::ops::Range<usize>| format!("{}:{}", file.display(), line_of(text, span.start));
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(String::new(), |s| format!(":{}", line_of(text, s.start)));
            anyhow::anyhow!("{}{line}: {}", file.display(), e.message().trim_end())
        })?;
        let mut rules = Vec::new();
        for (i, spanned) in raw.rule.into_iter().enumerate() {
            let line = rule_line(text, spanned.span().start);
            let raw = spanned.into_inner();
            let index = i + 1;
            // Named as soon as its name is known, so later errors say which rule.
            let name = match &raw.name {
                Some(v) => match v.get_ref() {
                    Value::String(s) if !s.trim().is_empty() => Some(s.clone()),
                    Value::String(_) => bail!("{}: rule #{index}: name: empty", at(v.span())),
                    other => bail!("{}: rule #{index}: name: expected a string, got {}", at(v.span()), kind(other)),
                },
                None => None,
            };
            let label = name.as_ref().map_or(format!("#{index}"), |n| format!("{n:?}"));
            let mut props = Props::default();
            let mut level_line = line;
            for (key, field) in
                [("level", &raw.level), ("weight", &raw.weight), ("tax", &raw.tax), ("smt", &raw.smt), ("prio", &raw.prio)]
            {
                let Some(v) = field else { continue };
                let Some(s) = scalar(v.get_ref()) else {
                    bail!("{}: rule {label}: {key}: expected a number or a string, got {}", at(v.span()), kind(v.get_ref()));
                };
                props.set(key, &s).map_err(|e| anyhow::anyhow!("{}: rule {label}: {e:#}", at(v.span())))?;
                if key == "level" {
                    level_line = line_of(text, v.span().start);
                }
            }
            let delegated = match &raw.delegated {
                None => false,
                Some(v) => match v.get_ref() {
                    Value::Boolean(b) => *b,
                    other => bail!(
                        "{}: rule {label}: delegated: expected true or false (whether the rule applies inside delegated cgroups), got {}",
                        at(v.span()),
                        kind(other)
                    ),
                },
            };
            let matcher = match &raw.matcher {
                Some(m) => {
                    let m_at = at(m.span());
                    let here = |span: std::ops::Range<usize>| format!("{}: rule {label}", at(span));
                    let matcher = parse_match(m.get_ref(), &here)?;
                    if matcher.is_empty() {
                        bail!("{m_at}: rule {label}: match: empty; give at least one of {MATCH_KEYS}");
                    }
                    if let (Some(comm), None, false) = (&m.get_ref().comm, matcher.uid, matcher.has_path()) {
                        bail!(
                            "{}: rule {label}: match.comm alone can be spoofed (any process may rename itself: prctl PR_SET_NAME); add match.uid or a path key (match.cgroup, match.cgroup_prefix, match.cgroup_regex, match.unit or match.slice)",
                            at(comm.span())
                        );
                    }
                    // Inside a delegated subtree its owner names the cgroups,
                    // so a path no longer anchors a comm: only a uid does.
                    if let (Some(comm), None, true) = (&m.get_ref().comm, matcher.uid, delegated) {
                        bail!(
                            "{}: rule {label}: match.comm with delegated = true needs match.uid (inside a delegated cgroup its owner names the cgroups, and any process may rename itself)",
                            at(comm.span())
                        );
                    }
                    matcher
                }
                None => bail!(
                    "{}:{line}: rule {label}: match: missing; give at least one of {MATCH_KEYS} (every cgroup: match.cgroup_prefix = \"/\")",
                    file.display()
                ),
            };
            rules.push(Rule { name, index, line, matcher, props, delegated, level_line });
        }
        Ok(RuleSet { file: file.to_path_buf(), rules })
    }

    /// The first rule whose conditions all hold for the cgroup (inside a
    /// delegated subtree, among the rules that say `delegated = true`).
    pub fn first_match(&self, f: &Facts) -> Option<&Rule> {
        self.rules.iter().find(|r| (r.delegated || !f.delegated) && r.matcher.matches(f))
    }

    /// For a delegated cgroup no rule matched: the first rule that would
    /// have, were the cgroup not delegated (the agent says so once).
    pub fn held_back(&self, f: &Facts) -> Option<&Rule> {
        if !f.delegated || self.first_match(f).is_some() {
            return None;
        }
        self.rules.iter().find(|r| !r.delegated && r.matcher.matches(f))
    }

    pub fn needs_procs(&self) -> bool {
        self.rules.iter().any(|r| r.matcher.needs_procs())
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Where a tag given by `rule` came from, for listings.
    pub fn source(&self, rule: &Rule) -> Source {
        Source::Rule { name: rule.label(), file: self.file.clone(), line: rule.line }
    }

    /// Same rule as `tag` and `--tag`: a level no node can form (the largest
    /// node has `largest` CPUs) would never be granted; refuse it now.
    pub fn check_levels(&self, largest: usize) -> Result<()> {
        for r in &self.rules {
            if (1usize << r.props.level) > largest {
                bail!(
                    "{}:{}: rule {}: level {}: needs {} CPUs in one node, the largest node here has {largest} (level at most {})",
                    self.file.display(),
                    r.level_line,
                    r.label(),
                    r.props.level,
                    1usize << r.props.level,
                    largest.max(1).ilog2()
                );
            }
        }
        Ok(())
    }
}

/// Where a field is, for messages: "rules.toml:7: rule \"database\"".
type Here<'a> = &'a dyn Fn(std::ops::Range<usize>) -> String;

/// A string field of `match`, or an error naming it.
fn string<'a>(key: &str, v: &'a Spanned<Value>, at: Here) -> Result<&'a str> {
    match v.get_ref() {
        Value::String(s) if !s.is_empty() => Ok(s),
        Value::String(_) => bail!("{}: match.{key}: empty", at(v.span())),
        other => bail!("{}: match.{key}: expected a string, got {}", at(v.span()), kind(other)),
    }
}

/// A path pattern must be written as the agent sees paths: relative to the
/// cgroup mount with a leading slash.
fn check_path(key: &str, s: &str, here: &str) -> Result<()> {
    if !s.starts_with('/') {
        bail!("{here}: match.{key}: {s:?} must start with / (paths are relative to /sys/fs/cgroup, e.g. \"/system.slice/...\")");
    }
    if s.starts_with("/sys/fs/cgroup/") {
        bail!("{here}: match.{key}: {s:?}: write the path relative to /sys/fs/cgroup (\"{}\")", &s["/sys/fs/cgroup".len()..]);
    }
    Ok(())
}

fn parse_match(raw: &RawMatch, at: Here) -> Result<Match> {
    let mut m = Match::default();
    if let Some(v) = &raw.cgroup {
        let s = string("cgroup", v, at)?;
        check_path("cgroup", s, &at(v.span()))?;
        m.cgroup = Some(Pattern::new(s, true).map_err(|e| anyhow::anyhow!("{}: match.cgroup: {e:#}", at(v.span())))?);
    }
    if let Some(v) = &raw.cgroup_prefix {
        let s = string("cgroup_prefix", v, at)?;
        check_path("cgroup_prefix", s, &at(v.span()))?;
        m.cgroup_prefix = Some(s.to_string());
    }
    if let Some(v) = &raw.cgroup_regex {
        let s = string("cgroup_regex", v, at)?;
        // regex's message spans lines (the pattern, a caret, the error): keep the error.
        let r = Regex::new(s).map_err(|e| {
            let why = e.to_string();
            let why = why.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("").trim().trim_start_matches("error: ");
            anyhow::anyhow!("{}: match.cgroup_regex: bad regex {s:?}: {why}", at(v.span()))
        })?;
        m.cgroup_regex = Some(r);
    }
    if let Some(v) = &raw.unit {
        let s = string("unit", v, at)?;
        if s.contains('/') || !UNIT_KINDS.iter().any(|k| s.ends_with(k)) {
            bail!(
                "{}: match.unit: {s:?} is not a systemd unit name (one path component ending {})",
                at(v.span()),
                UNIT_KINDS.join(", ")
            );
        }
        m.unit = Some(Pattern::new(s, true).map_err(|e| anyhow::anyhow!("{}: match.unit: {e:#}", at(v.span())))?);
    }
    if let Some(v) = &raw.slice {
        let s = string("slice", v, at)?;
        if s.contains('/') || !s.ends_with(".slice") {
            bail!("{}: match.slice: {s:?} is not a slice name (one path component ending .slice)", at(v.span()));
        }
        m.slice = Some(Pattern::new(s, true).map_err(|e| anyhow::anyhow!("{}: match.slice: {e:#}", at(v.span())))?);
    }
    if let Some(v) = &raw.comm {
        let s = string("comm", v, at)?;
        let glob = s.contains(['*', '?', '[', '{']);
        if !glob && s.chars().count() > COMM_MAX {
            bail!(
                "{}: match.comm: {s:?} is longer than {COMM_MAX} characters, which the kernel keeps of a name (write {:?})",
                at(v.span()),
                s.chars().take(COMM_MAX).collect::<String>()
            );
        }
        m.comm = Some(Pattern::new(s, false).map_err(|e| anyhow::anyhow!("{}: match.comm: {e:#}", at(v.span())))?);
    }
    if let Some(v) = &raw.uid {
        m.uid = Some(match v.get_ref() {
            Value::Integer(i) => u32::try_from(*i)
                .map_err(|_| anyhow::anyhow!("{}: match.uid: {i} is out of range 0..={}", at(v.span()), u32::MAX))?,
            other => bail!("{}: match.uid: expected an integer uid, got {}", at(v.span()), kind(other)),
        });
    }
    Ok(m)
}

#[cfg(test)]
mod tests;
