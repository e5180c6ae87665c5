//! Which tag is in force for a cgroup, and where it came from.
//!
//! A cgroup can get a tag of its own from three places, in this order:
//! `--tag` (given for this run), the tag stored on it (`scx_chameleon tag`,
//! an explicit decision about this very cgroup), and the first rule of the
//! rules file that matches it (a general statement about many cgroups, so
//! it yields to the explicit ones). A cgroup with none of them inherits the
//! tag in force for its parent; one whose stored tag is damaged gets no tag
//! (reported, never silently replaced by a rule's or its parent's). The
//! nearest own tag wins: a rule matching a child beats its parent's stored
//! tag, as a child's stored tag does.

use crate::tags::tag::Props;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Where a cgroup's tag in force comes from (`scx_chameleon tags`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// Given at start-up with `--tag`.
    Flag,
    /// Stored on the cgroup by `scx_chameleon tag`.
    Stored,
    /// The first rule of the rules file that matched it.
    Rule { name: String, file: PathBuf, line: usize },
    /// The own tag of this ancestor.
    Inherited { from: PathBuf },
    /// Its stored tag does not decode: no tag in force.
    Damaged { error: String },
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag => write!(f, "--tag"),
            Source::Stored => write!(f, "stored"),
            Source::Rule { name, file, line } => write!(f, "rule {name} ({}:{line})", file.display()),
            Source::Inherited { from } => write!(f, "inherited from {}", from.display()),
            Source::Damaged { error } => write!(f, "DAMAGED, no tag in force: {error}"),
        }
    }
}

/// What was found for one cgroup.
#[derive(Debug, Clone)]
pub struct Found {
    pub flag: Option<Props>,
    /// The stored tag, or why it cannot be read.
    pub stored: Result<Option<Props>, String>,
    pub rule: Option<(Props, Source)>,
    /// The tag in force for the parent, with the path of the cgroup that owns it.
    pub inherited: Option<(Props, PathBuf)>,
}

/// The decision for one cgroup.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// Its own tag (from --tag, the store or a rule).
    pub own: Option<Props>,
    /// The tag in force: its own, else the parent's (none if damaged).
    pub effective: Option<Props>,
    pub source: Option<Source>,
}

/// `--tag` beats the stored tag beats a rule beats the parent's tag.
pub fn decide(found: Found) -> Decision {
    let own = |p: Props, s: Source| Decision { own: Some(p), effective: Some(p), source: Some(s) };
    if let Some(p) = found.flag {
        return own(p, Source::Flag);
    }
    match found.stored {
        Err(error) => return Decision { own: None, effective: None, source: Some(Source::Damaged { error }) },
        Ok(Some(p)) => return own(p, Source::Stored),
        Ok(None) => {}
    }
    if let Some((p, s)) = found.rule {
        return own(p, s);
    }
    match found.inherited {
        Some((p, from)) => Decision { own: None, effective: Some(p), source: Some(Source::Inherited { from }) },
        None => Decision { own: None, effective: None, source: None },
    }
}

/// One line of `scx_chameleon tags`, as the agent sends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listed {
    pub path: PathBuf,
    pub id: u64,
    /// The tag in force, in its stored form; None when damaged.
    pub tag: Option<String>,
    pub source: Source,
}

impl std::fmt::Display for Listed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.tag {
            Some(t) => write!(f, "{} (cgroup {}): {t} ({})", self.path.display(), self.id, self.source),
            None => write!(f, "{} (cgroup {}): {}", self.path.display(), self.id, self.source),
        }
    }
}
