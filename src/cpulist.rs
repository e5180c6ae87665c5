//! CPU lists as people and the kernel write them ("0-3,6"), read with a
//! bound: every number is checked against the number of CPU ids while it is
//! read, before any range is expanded, so the work and memory a list costs
//! are at most one flag per CPU id whatever it says. "0-4000000000" is an
//! error naming that CPU, not four billion entries; a number past u64 is the
//! same error, not an overflow.
//!
//! Syntax: items separated by ',', each a CPU id or a range "A-B" with
//! A <= B (both ends included), decimal digits only, spaces around an item
//! allowed. The kernel's strides ("0-7:2") are not accepted.

use std::fmt;

/// A set of CPU ids, each below the bound it was read with; ascending, each
/// once. Its text (Display) is the shortest list ("1,3-5") and reads back as
/// the same set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(Vec<usize>);

/// Why a text is not a CPU list; its Display is the message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CpuListError {
    /// Nothing but spaces.
    Empty,
    /// An item with nothing in it ("1,,2").
    EmptyItem { list: String },
    /// Something that is not a decimal CPU id, as written.
    NotANumber { list: String, what: String },
    /// A range whose end is below its start.
    Downwards { list: String, item: String },
    /// A CPU id at or past the bound (as written: it may not fit a u64).
    TooLarge { cpu: String, nr_cpus: usize },
}

/// Longest part of the input quoted back in a message.
const QUOTE_MAX: usize = 40;

fn quote(s: &str) -> String {
    match s.char_indices().nth(QUOTE_MAX) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s.to_string(),
    }
}

impl fmt::Display for CpuListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CpuListError::Empty => write!(f, "no CPU given"),
            CpuListError::EmptyItem { list } => write!(f, "'{}' is not a CPU list: an empty item", quote(list)),
            CpuListError::NotANumber { list, what } => {
                write!(f, "'{}' is not a CPU list: '{}' is not a CPU number", quote(list), quote(what))
            }
            CpuListError::Downwards { list, item } => {
                write!(f, "'{}' is not a CPU list: the range {item} must go upwards", quote(list))
            }
            CpuListError::TooLarge { cpu, nr_cpus: 0 } => write!(f, "CPU {}: this machine has no CPU ids", quote(cpu)),
            CpuListError::TooLarge { cpu, nr_cpus } => {
                write!(f, "CPU {}: this machine has CPUs 0-{}", quote(cpu), nr_cpus - 1)
            }
        }
    }
}

impl std::error::Error for CpuListError {}

/// A number as written, without leading zeros ("0" for zeros only).
fn as_written(digits: &str) -> String {
    match digits.trim_start_matches('0') {
        "" => "0".to_string(),
        d => d.to_string(),
    }
}

/// One CPU id of `list`: decimal digits, below `nr_cpus`. Accumulated with
/// a check at each digit, so no length of digits overflows.
fn cpu_id(list: &str, text: &str, nr_cpus: usize) -> Result<usize, CpuListError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CpuListError::NotANumber { list: list.to_string(), what: text.to_string() });
    }
    let mut id = 0usize;
    for b in text.bytes() {
        id = id
            .checked_mul(10)
            .and_then(|v| v.checked_add(usize::from(b - b'0')))
            .filter(|&v| v < nr_cpus)
            .ok_or_else(|| CpuListError::TooLarge { cpu: as_written(text), nr_cpus })?;
    }
    Ok(id)
}

impl CpuList {
    /// Read `text` as a list of CPU ids below `nr_cpus`.
    pub fn parse(text: &str, nr_cpus: usize) -> Result<CpuList, CpuListError> {
        let list = text.trim();
        if list.is_empty() {
            return Err(CpuListError::Empty);
        }
        // One flag per CPU id: the bound on what any list can cost.
        let mut given = vec![false; nr_cpus];
        for item in list.split(',').map(str::trim) {
            if item.is_empty() {
                return Err(CpuListError::EmptyItem { list: list.to_string() });
            }
            let (lo, hi) = match item.split_once('-') {
                Some((a, b)) => (cpu_id(list, a, nr_cpus)?, cpu_id(list, b, nr_cpus)?),
                None => {
                    let c = cpu_id(list, item, nr_cpus)?;
                    (c, c)
                }
            };
            if hi < lo {
                return Err(CpuListError::Downwards { list: list.to_string(), item: item.to_string() });
            }
            // Both ends are below nr_cpus: at most nr_cpus flags.
            given[lo..=hi].iter_mut().for_each(|g| *g = true);
        }
        Ok(CpuList(given.iter().enumerate().filter(|(_, &g)| g).map(|(c, _)| c).collect()))
    }

    /// The ids, ascending, each once (never empty: an empty text is an error).
    pub fn cpus(&self) -> &[usize] {
        &self.0
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut i = 0;
        while i < self.0.len() {
            let lo = self.0[i];
            let mut j = i;
            while j + 1 < self.0.len() && self.0[j + 1] == self.0[j] + 1 {
                j += 1;
            }
            let sep = if first { "" } else { "," };
            first = false;
            if j == i {
                write!(f, "{sep}{lo}")?;
            } else {
                write!(f, "{sep}{lo}-{}", self.0[j])?;
            }
            i = j + 1;
        }
        Ok(())
    }
}

/// clap's value parser for a CPU list on the command line: bounded by the
/// kernel's possible CPU ids (scx_utils' NR_CPU_IDS), the same bound the
/// agent reads the request with.
pub fn arg(text: &str) -> Result<CpuList, String> {
    CpuList::parse(text, *scx_utils::NR_CPU_IDS).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests;
