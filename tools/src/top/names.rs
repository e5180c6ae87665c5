//! Names for what the agent reports by number, for the tools (`top`,
//! `trace`): a cgroup's path instead of its id, a task's comm beside its
//! pid, and times in human units instead of raw nanoseconds.
//!
//! The tools run on the agent's host, so names come from its filesystems:
//! on cgroup v2 a cgroup directory's inode number is the cgroup's id, so a
//! walk of the cgroup root maps ids to paths (done lazily, on a miss, at most
//! once a second; paths already known are kept, a removed cgroup keeps its
//! last name); a task's comm is /proc/PID/comm (cached, re-read after
//! COMM_TTL; a task that is gone keeps its last known comm). The roots are
//! given, so host tests use a temporary directory; with no root nothing is
//! resolved and the numbers are shown.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The cgroup v2 mount and procfs, where `top` resolves names.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";
pub const PROC_ROOT: &str = "/proc";
/// A miss walks the cgroup tree again at most this often.
pub const REWALK: Duration = Duration::from_secs(1);
/// How long a comm read from /proc is trusted (a pid may be reused).
pub const COMM_TTL: Duration = Duration::from_secs(5);
/// Comms kept at most; the least recently read go first beyond it.
const COMMS_KEPT: usize = 4096;

/// A duration (or a time on the monotonic clock) in nanoseconds, in the
/// largest unit it reaches, to three significant figures below a second:
/// "850 ns", "7.94 µs", "11.9 ms", "250 ms"; seconds with two decimals,
/// "43.02 s". Rounding that reaches 1000 of a unit moves to the next
/// ("1.00 ms", not "1000 µs").
pub fn fmt_ns(ns: u64) -> String {
    if ns < 1000 {
        return format!("{ns} ns");
    }
    let ns = ns as u128;
    // round(ns * scale / unit), without floating point.
    let round = |unit: u128, scale: u128| (ns * scale + unit / 2) / unit;
    for (unit, name) in [(1_000u128, "µs"), (1_000_000, "ms")] {
        let hundredths = round(unit, 100);
        if hundredths < 1000 {
            return format!("{}.{:02} {name}", hundredths / 100, hundredths % 100);
        }
        let tenths = round(unit, 10);
        if tenths < 1000 {
            return format!("{}.{} {name}", tenths / 10, tenths % 10);
        }
        let whole = round(unit, 1);
        if whole < 1000 {
            return format!("{whole} {name}");
        }
    }
    let hundredths = round(1_000_000_000, 100);
    format!("{}.{:02} s", hundredths / 100, hundredths % 100)
}

/// "141 (pgbench)", or the pid alone while its comm is unknown.
pub fn pid_text(pid: i32, comm: Option<&str>) -> String {
    match comm.filter(|c| !c.is_empty()) {
        Some(c) => format!("{pid} ({})", chameleon::report::event::escape_comm(c)),
        None => pid.to_string(),
    }
}

/// Whether cgroup `path` is `prefix` or below it, by whole components:
/// "/work" holds "/work/db" but not "/workers"; "/" holds everything.
pub fn under(path: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    prefix.is_empty() || path == prefix || path.strip_prefix(prefix).is_some_and(|rest| rest.starts_with('/'))
}

/// `path` in at most `width` columns: whole if it fits, else its systemd
/// unit ("nginx.service") if that fits, else its tail after '…'.
pub fn fit_path(path: &str, width: usize) -> String {
    let len = path.chars().count();
    if len <= width {
        return path.to_string();
    }
    let last = path.rsplit('/').next().unwrap_or(path);
    let unit = [".service", ".scope", ".slice", ".socket", ".mount"].iter().any(|s| last.ends_with(s));
    if unit && last.chars().count() <= width {
        return last.to_string();
    }
    let keep = width.saturating_sub(1);
    let tail: String = path.chars().skip(len - keep.min(len)).collect();
    format!("…{tail}")
}

/// Every cgroup under `root`: id (the directory's inode) → path relative to
/// `root` ("/" for the root itself, "/work/db" below). Unreadable
/// directories are skipped; symlinks are not followed.
pub fn walk_cgroups(root: &Path) -> HashMap<u64, String> {
    use std::os::unix::fs::MetadataExt;
    let mut found = HashMap::new();
    let Ok(meta) = std::fs::symlink_metadata(root) else { return found };
    found.insert(meta.ino(), "/".to_string());
    let mut stack = vec![(root.to_path_buf(), String::new())];
    while let Some((dir, rel)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            if !ft.is_dir() {
                continue;
            }
            let Ok(meta) = e.metadata() else { continue };
            let path = format!("{rel}/{}", e.file_name().to_string_lossy());
            found.insert(meta.ino(), path.clone());
            stack.push((e.path(), path));
        }
    }
    found
}

/// A task's comm from `proc_root`/PID/comm (None: gone or unreadable).
pub fn read_comm(proc_root: &Path, pid: i32) -> Option<String> {
    if pid <= 0 {
        return None;
    }
    let text = std::fs::read_to_string(proc_root.join(pid.to_string()).join("comm")).ok()?;
    let comm = text.trim_end_matches('\n');
    (!comm.is_empty()).then(|| comm.to_string())
}

/// Cgroup ids → paths, walked lazily and kept.
#[derive(Debug, Default)]
pub struct CgroupNames {
    root: Option<PathBuf>,
    paths: HashMap<u64, String>,
    walked: Option<Instant>,
    walks: usize,
}

impl CgroupNames {
    pub fn new(root: Option<PathBuf>) -> Self {
        CgroupNames { root, ..Default::default() }
    }

    /// Make sure `id` is known if it can be: on a miss, walk the tree again
    /// unless that was done less than REWALK ago.
    pub fn resolve(&mut self, id: u64, now: Instant) {
        if id == 0 || self.paths.contains_key(&id) {
            return;
        }
        let Some(root) = &self.root else { return };
        if self.walked.is_some_and(|t| now.saturating_duration_since(t) < REWALK) {
            return;
        }
        self.walked = Some(now);
        self.walks += 1;
        self.paths.extend(walk_cgroups(root));
    }

    pub fn get(&self, id: u64) -> Option<&str> {
        self.paths.get(&id).map(String::as_str)
    }

    /// How many walks were done (tests: misses do not walk every time).
    #[cfg(test)]
    pub fn walks(&self) -> usize {
        self.walks
    }

    /// The ids whose path is `prefix` or below it.
    #[cfg(test)]
    pub fn ids_under(&self, prefix: &str) -> Vec<u64> {
        self.paths.iter().filter(|(_, p)| under(p, prefix)).map(|(id, _)| *id).collect()
    }
}

/// Pids → comms, from the events and from /proc.
#[derive(Debug, Default)]
pub struct Comms {
    proc_root: Option<PathBuf>,
    /// comm and when it was last confirmed.
    comms: HashMap<i32, (String, Instant)>,
}

impl Comms {
    pub fn new(proc_root: Option<PathBuf>) -> Self {
        Comms { proc_root, ..Default::default() }
    }

    /// The kernel named the task in one of its events.
    pub fn learn(&mut self, pid: i32, comm: &str, now: Instant) {
        if pid > 0 && !comm.is_empty() {
            self.comms.insert(pid, (comm.to_string(), now));
            self.bound();
        }
    }

    /// Read /proc if the comm is unknown or older than COMM_TTL; a task that
    /// is gone keeps the comm it had.
    pub fn resolve(&mut self, pid: i32, now: Instant) {
        if pid <= 0 || self.comms.get(&pid).is_some_and(|(_, t)| now.saturating_duration_since(*t) < COMM_TTL) {
            return;
        }
        let Some(root) = &self.proc_root else { return };
        match read_comm(root, pid) {
            Some(c) => {
                self.comms.insert(pid, (c, now));
                self.bound();
            }
            // Gone: keep the last known comm, and do not ask again until the TTL.
            None => {
                if let Some(e) = self.comms.get_mut(&pid) {
                    e.1 = now;
                }
            }
        }
    }

    pub fn get(&self, pid: i32) -> Option<&str> {
        self.comms.get(&pid).map(|(c, _)| c.as_str())
    }

    fn bound(&mut self) {
        if self.comms.len() > COMMS_KEPT {
            let mut by_age: Vec<(Instant, i32)> = self.comms.iter().map(|(p, (_, t))| (*t, *p)).collect();
            by_age.sort_unstable();
            for (_, pid) in by_age.into_iter().take(self.comms.len() - COMMS_KEPT) {
                self.comms.remove(&pid);
            }
        }
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.comms.len()
    }

}

/// Both, as `top` keeps them.
#[derive(Debug, Default)]
pub struct Names {
    pub cgroups: CgroupNames,
    pub comms: Comms,
}

impl Names {
    /// Resolving under these roots (the host's: CGROUP_ROOT, PROC_ROOT).
    pub fn at(cgroup_root: &Path, proc_root: &Path) -> Self {
        Names { cgroups: CgroupNames::new(Some(cgroup_root.into())), comms: Comms::new(Some(proc_root.into())) }
    }

    pub fn host() -> Self {
        Self::at(Path::new(CGROUP_ROOT), Path::new(PROC_ROOT))
    }

    /// "141 (pgbench)".
    pub fn pid(&self, pid: i32) -> String {
        pid_text(pid, self.comms.get(pid))
    }

    /// "/work/db", or "cgroup 54" while unknown ("-" for none).
    pub fn cgroup(&self, id: u64) -> String {
        match (id, self.cgroups.get(id)) {
            (0, _) => "-".into(),
            (_, Some(p)) => p.to_string(),
            (id, None) => format!("cgroup {id}"),
        }
    }
}

#[cfg(test)]
mod tests;
