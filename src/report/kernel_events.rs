//! The kernel's own sched_ext event counters (kernel 6.16+): while a
//! scheduler is loaded, /sys/kernel/sched_ext/root/events lists one counter a
//! line, "SCX_EV_NAME VALUE" (tasks the kernel placed itself because
//! select_cpu picked an unusable CPU, dispatches to an offline CPU's local
//! queue, time spent in bypass mode...). They are what the kernel saw of the
//! policy from outside, so the metrics carry them next to our own counters.
//!
//! The names differ between kernel versions (new ones appear), so they are
//! parsed generically: whatever the file lists, the metrics list.

use std::collections::BTreeMap;
use std::path::Path;

/// Where the kernel publishes the counters of the scheduler loaded now.
pub const PATH: &str = "/sys/kernel/sched_ext/root/events";

/// What one read of the file gave: the counters (by metric name, see
/// `metric_name`), and the lines that were not "NAME VALUE", each with its
/// line number, so that a format change is reported, not silently dropped.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Parsed {
    pub counters: BTreeMap<String, u64>,
    pub errors: Vec<String>,
}

/// "SCX_EV_SELECT_CPU_FALLBACK" -> "select_cpu_fallback": the kernel's prefix
/// says nothing once the counters are labelled as kernel events.
pub fn metric_name(kernel_name: &str) -> String {
    kernel_name.strip_prefix("SCX_EV_").unwrap_or(kernel_name).to_ascii_lowercase()
}

/// Parse the file's text. Blank lines are skipped; a line that is not a name
/// ([A-Za-z0-9_]) and an unsigned integer is reported in `errors` and the
/// rest are still used.
pub fn parse(text: &str) -> Parsed {
    let mut out = Parsed::default();
    for (i, line) in text.lines().enumerate() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [] => {}
            [name, value] => {
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    out.errors.push(format!("line {}: {name:?} is not a counter name", i + 1));
                    continue;
                }
                match value.parse::<u64>() {
                    Ok(v) => {
                        out.counters.insert(metric_name(name), v);
                    }
                    Err(_) => out.errors.push(format!("line {}: {name}: {value:?} is not an unsigned integer", i + 1)),
                }
            }
            _ => out.errors.push(format!("line {}: expected \"NAME VALUE\", got {line:?}", i + 1)),
        }
    }
    out
}

/// Read and parse `path`. No file (an older kernel, or no scheduler loaded)
/// means no counters, not an error; an unreadable file is an error.
pub fn read(path: &Path) -> std::io::Result<Parsed> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(parse(&text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Parsed::default()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests;
