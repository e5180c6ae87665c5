//! Where a `tax=auto` task's progress comes from (auto_tax.rs), and what
//! else its samples need: its CPU time (the kernel's, /proc/TID/schedstat)
//! and its fused time (BPF's task context).
//!
//! Two sources, best first:
//! - **its own counter**: the application bumps a u64 in a small file,
//!   `/dev/shm/chameleon-progress.<tid>` (`include/chameleon_progress.h`,
//!   or [`Counter`] here). Its own notion of work done is what a speed-up
//!   should be measured in. The file is untrusted input: opened without
//!   following a symlink, a regular file owned by the task's effective uid,
//!   read as one fixed-size record whose magic and version must match. It
//!   counts only once it has moved while watched, so a file a dead thread
//!   of the same tid left behind is not taken for a stalled task.
//! - **instructions retired** (perf_event_open, counting, user space only),
//!   where the PMU exists. Under QEMU's TCG (the test VM) there is none:
//!   the open fails and the task has no source until a counter file
//!   appears (its tax then stays where it is).

use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::nodes::auto_tax::Sample;

/// Where counter files live: tmpfs on every distribution, writable by all
/// (sticky), so a task needs no setup to create its own.
pub const DIR: &str = "/dev/shm";
/// "CHPG" in memory order on little-endian machines.
pub const MAGIC: u32 = 0x4750_4843;
pub const VERSION: u32 = 1;
/// magic (u32), version (u32), count (u64).
pub const RECORD: usize = 16;

/// A thread's counter file.
pub fn path_of(tid: i32) -> PathBuf {
    Path::new(DIR).join(format!("chameleon-progress.{tid}"))
}

/// Read a counter file owned by `uid`; why not, if it is not one.
pub fn read_counter(path: &Path, uid: u32) -> Result<u64, &'static str> {
    // O_NONBLOCK: a FIFO planted at the name must not block the agent.
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| if e.raw_os_error() == Some(libc::ELOOP) { "a symlink" } else { "cannot be opened" })?;
    let md = f.metadata().map_err(|_| "cannot be read")?;
    if !md.file_type().is_file() {
        return Err("not a regular file");
    }
    if md.uid() != uid {
        return Err("not owned by the task's user");
    }
    let mut rec = [0u8; RECORD];
    f.read_exact(&mut rec).map_err(|_| "shorter than a record")?;
    let word = |i: usize| u32::from_ne_bytes(rec[i..i + 4].try_into().unwrap());
    if word(0) != MAGIC {
        return Err("bad magic");
    }
    if word(4) != VERSION {
        return Err("unknown version");
    }
    Ok(u64::from_ne_bytes(rec[8..16].try_into().unwrap()))
}

/// The effective uid of a task, from /proc/TID/status.
fn task_euid(tid: i32) -> Option<u32> {
    let s = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// CPU time the kernel accounted to a task (schedstat, field 1), ns.
pub fn cpu_ns(tid: i32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{tid}/schedstat")).ok()?.split_whitespace().next()?.parse().ok()
}

/// Instructions one thread retires in user space, counted while it runs.
pub struct Instructions(OwnedFd);

impl Instructions {
    pub fn open(tid: i32) -> io::Result<Instructions> {
        use perf_event_open_sys::bindings as perf;
        let mut attr = perf::perf_event_attr {
            type_: perf::PERF_TYPE_HARDWARE,
            size: std::mem::size_of::<perf::perf_event_attr>() as u32,
            config: perf::PERF_COUNT_HW_INSTRUCTIONS as u64,
            // Scaled by enabled / running if the PMU is shared (multiplexed).
            read_format: (perf::PERF_FORMAT_TOTAL_TIME_ENABLED | perf::PERF_FORMAT_TOTAL_TIME_RUNNING) as u64,
            ..Default::default()
        };
        attr.set_exclude_kernel(1);
        attr.set_exclude_hv(1);
        // SAFETY: attr is a zeroed perf_event_attr but for the fields set
        // above, of the size it says; it asks only for a counter.
        let fd = unsafe {
            perf_event_open_sys::perf_event_open(&mut attr, tid, -1, -1, perf::PERF_FLAG_FD_CLOEXEC as libc::c_ulong)
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a new fd the kernel just gave us.
        Ok(Instructions(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub fn read(&self) -> Option<u64> {
        let mut v = [0u64; 3];
        // SAFETY: reads at most 24 bytes into v.
        let n = unsafe { libc::read(self.0.as_raw_fd(), v.as_mut_ptr().cast(), 24) };
        if n != 24 {
            return None;
        }
        let [count, enabled, running] = v;
        if running == 0 {
            return Some(0);
        }
        Some((count as u128 * enabled as u128 / running as u128) as u64)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    None,
    File,
    Instructions,
}

impl Source {
    pub fn name(self) -> &'static str {
        match self {
            Source::None => "none",
            Source::File => "file",
            Source::Instructions => "instructions",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Reading {
    at_ns: u64,
    cpu_ns: u64,
    fused_ns: u64,
    progress: u64,
    source: Source,
}

/// One task's progress, sampled each interval.
pub struct Probe {
    tid: i32,
    perf: Option<Instructions>,
    /// Given at creation: whether `perf` may ever be opened.
    may_count: bool,
    perf_tried: bool,
    /// The counter file's value when first seen, until it moves.
    file_first: Option<u64>,
    file_live: bool,
    last: Option<Reading>,
    source: Source,
}

impl Probe {
    /// A probe of thread `tid`; `may_count`: whether it may open an
    /// instruction counter (else only its counter file is read).
    pub fn new(tid: i32, may_count: bool) -> Probe {
        Probe { tid, perf: None, may_count, perf_tried: !may_count, file_first: None, file_live: false, last: None, source: Source::None }
    }

    /// May it open an instruction counter (a perf fd; auto_taxes.rs caps
    /// how many are held)? Without one it counts by its file or not at all.
    pub fn may_count_instructions(&self) -> bool {
        self.may_count
    }

    pub fn source(&self) -> Source {
        self.source
    }

    /// Its counter file, if it has one that counts.
    fn file(&mut self) -> Option<u64> {
        let uid = task_euid(self.tid)?;
        match read_counter(&path_of(self.tid), uid) {
            Ok(v) => {
                let first = *self.file_first.get_or_insert(v);
                self.file_live |= v != first;
                self.file_live.then_some(v)
            }
            Err(_) => {
                self.file_first = None;
                self.file_live = false;
                None
            }
        }
    }

    fn instructions(&mut self) -> Option<u64> {
        if !self.perf_tried {
            self.perf_tried = true;
            self.perf = Instructions::open(self.tid).ok();
        }
        self.perf.as_ref()?.read()
    }

    /// Read everything now (`now_ns`: monotonic; `fused_ns`: BPF's count,
    /// None if unreadable) and return the interval since the last reading,
    /// if both exist and are in the same source; and whether the source
    /// changed (its samples are then in other units).
    pub fn sample(&mut self, now_ns: u64, fused_ns: Option<u64>) -> (Option<Sample>, bool) {
        let (progress, source) = match self.file() {
            Some(v) => (Some(v), Source::File),
            None => match self.instructions() {
                Some(v) => (Some(v), Source::Instructions),
                None => (None, Source::None),
            },
        };
        let changed = source != self.source;
        self.source = source;
        let now = match (progress, cpu_ns(self.tid), fused_ns) {
            (Some(progress), Some(cpu_ns), Some(fused_ns)) => Some(Reading { at_ns: now_ns, cpu_ns, fused_ns, progress, source }),
            _ => None,
        };
        let prev = std::mem::replace(&mut self.last, now);
        let sample = match (prev, now) {
            (Some(a), Some(b)) if a.source == b.source => delta(&a, &b),
            _ => None,
        };
        (sample, changed)
    }
}

/// The interval between two readings; None if any counter went backwards
/// (a file rewritten, a task context recreated): that interval is garbage.
fn delta(a: &Reading, b: &Reading) -> Option<Sample> {
    Some(Sample {
        wall_ns: b.at_ns.checked_sub(a.at_ns)?,
        cpu_ns: b.cpu_ns.checked_sub(a.cpu_ns)?,
        fused_ns: b.fused_ns.checked_sub(a.fused_ns)?,
        progress: b.progress.checked_sub(a.progress)?,
    })
}

/// The writing side for Rust programs, as `include/chameleon_progress.h`
/// for C: the calling thread's counter file, mapped; [`Counter::add`] is a
/// plain store (only this thread writes it). Removes the file when dropped.
pub struct Counter {
    ptr: *mut u64,
    map: *mut libc::c_void,
    path: PathBuf,
}

impl Counter {
    /// Create (or take over) the calling thread's counter, from 0.
    pub fn open() -> io::Result<Counter> {
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::syscall(libc::SYS_gettid) } as i32;
        let path = path_of(tid);
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)?;
        let md = f.metadata()?;
        // SAFETY: geteuid has no preconditions.
        if !md.file_type().is_file() || md.uid() != unsafe { libc::geteuid() } {
            return Err(io::Error::new(io::ErrorKind::PermissionDenied, format!("{} is not ours", path.display())));
        }
        f.set_len(RECORD as u64)?;
        // SAFETY: a shared mapping of RECORD bytes of a file of that size.
        let map = unsafe {
            libc::mmap(std::ptr::null_mut(), RECORD, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, f.as_raw_fd(), 0)
        };
        if map == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let words = map.cast::<u32>();
        // SAFETY: the mapping holds RECORD bytes, page aligned. The count
        // is zeroed before the header says the record is valid.
        unsafe {
            std::ptr::write_volatile(words.add(2).cast::<u64>(), 0);
            std::ptr::write_volatile(words.add(1), VERSION);
            std::ptr::write_volatile(words, MAGIC);
        }
        // SAFETY: as above; offset 8 is 8-aligned.
        Ok(Counter { ptr: unsafe { words.add(2).cast::<u64>() }, map, path })
    }

    /// Count `n` units of progress.
    #[inline]
    pub fn add(&self, n: u64) {
        // SAFETY: ptr stays mapped while self lives; one writer.
        unsafe { std::ptr::write_volatile(self.ptr, std::ptr::read_volatile(self.ptr).wrapping_add(n)) }
    }
}

impl Drop for Counter {
    fn drop(&mut self) {
        // SAFETY: the mapping made in open().
        unsafe { libc::munmap(self.map, RECORD) };
        let _ = std::fs::remove_file(&self.path);
    }
}

/// BPF's fused time of a task (its task context, `task_ctxs`), looked up
/// by `key`, the pidfd the agent holds for it (task storage maps are keyed
/// by one; the held one names the task that asked, where a pidfd opened
/// now by its pid could name a newcomer). None if the task is gone or has
/// no context.
pub fn fused_ns(task_ctxs: &dyn libbpf_rs::MapCore, key: &[u8; 4]) -> Option<u64> {
    use libbpf_rs::MapFlags;
    let raw = task_ctxs.lookup(key, MapFlags::ANY).ok()??;
    type TaskCtx = crate::bpf_skel::types::task_ctx;
    if raw.len() < std::mem::size_of::<TaskCtx>() {
        return None;
    }
    // SAFETY: the length was checked; task_ctx is plain integers.
    let t: TaskCtx = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast()) };
    Some(t.fused_ns)
}

#[cfg(test)]
mod tests;
