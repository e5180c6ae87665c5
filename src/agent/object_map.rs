//! The policy's `assignments` map and the tasks it is written for.
//!
//! The map is task storage (bpf/intf.h), written through a pidfd per task:
//! the agent holds one for every requester, from its first DEMAND until it
//! leaves. A write reaches that task or fails because it has gone; it never
//! reaches a newcomer that was given the pid. Whether a requester is still
//! there is its pidfd's answer, where /proc/PID would answer for the
//! newcomer. The kernel frees a task's value with the task, so nothing is
//! deleted here and an exit the agent never heard of leaves nothing behind.
//!
//! A pid is only a name until a pidfd holds it, and the DEMAND that names it
//! is read after it was sent: the task that sent it may have exited and its
//! pid gone to a newcomer. So a pidfd is kept only for the task that asked:
//! the event carries its start, compared with the task's behind the pidfd
//! (pidfd.rs, `open_as`). At most `cap` are held (fd_budget.rs).
//!
//! Invariant: a pid is held here exactly while it is one of the Assigner's
//! requesters (`track` on DEMAND, `forget` when it leaves).

use crate::bpf_intf::{self, as_bytes};
use crate::pidfd::{NotIt, TaskFd};
use libbpf_rs::{MapCore, MapFlags};
use std::collections::HashMap;
use std::io;

/// One requester, held: its pidfd and its start (the DEMAND's `start_ns`,
/// confirmed against the task when the pidfd was opened).
struct Held {
    fd: TaskFd,
    start_ns: u64,
}

pub struct ObjectMap {
    tasks: HashMap<i32, Held>,
    /// At most this many pidfds held (fd_budget.rs): a user who can make
    /// threads in a tagged cgroup must not run the agent out of file
    /// descriptors. Requesters past it are refused and counted.
    cap: usize,
    refused: Refused,
}

/// DEMANDs not tracked, by reason, since the start (for the metrics).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Refused {
    /// At the cap, or no file descriptor for a pidfd: the task runs
    /// without an object until it asks again.
    pub full: u64,
    /// The pid named a newcomer by the time it was opened: the task that
    /// asked had exited.
    pub reused: u64,
}

/// What `track` found.
#[derive(Debug, PartialEq, Eq)]
pub enum Track {
    /// Held already, and still the same task.
    Known,
    /// Held from now.
    New,
    /// The pid was held for a task that has exited (its exit event lost):
    /// the task that asked is held from now; the old task's state must go.
    Replaced,
}

/// Why `track` holds nothing for a DEMAND. In every case but `Stale` the
/// pid is not held afterwards.
#[derive(Debug)]
pub enum NotTracked {
    /// The task that asked is gone.
    Gone,
    /// The pid names a newcomer now, not the task that asked (gone).
    Reused,
    /// The pid is held for a live task that is not the one that asked: an
    /// earlier task's DEMAND, read after it exited. Nothing changes.
    Stale,
    /// No room: at the cap, or no file descriptor. Counted.
    Full,
}

impl ObjectMap {
    pub fn with_cap(cap: usize) -> ObjectMap {
        ObjectMap { tasks: HashMap::new(), cap, refused: Refused::default() }
    }

    /// Hold the task that sent a DEMAND: `pid`, started at `start_ns`
    /// (pidfd.rs, `open_as`: the pid may name a newcomer by now).
    pub fn track(&mut self, pid: i32, start_ns: u64) -> Result<Track, NotTracked> {
        let replaced = match self.tasks.get(&pid) {
            Some(h) if !h.fd.exited() => {
                // Alive, so nothing else can have the pid: the DEMAND was
                // sent by this task, or by an earlier one read late.
                return if h.start_ns == start_ns { Ok(Track::Known) } else { Err(NotTracked::Stale) };
            }
            Some(_) => true,
            None => false,
        };
        // An exited one's place is free before the cap is checked.
        self.tasks.remove(&pid);
        if self.tasks.len() >= self.cap {
            self.refused.full += 1;
            return Err(NotTracked::Full);
        }
        let fd = match TaskFd::open_as(pid, start_ns) {
            Ok(fd) => fd,
            Err(NotIt::Gone) => return Err(NotTracked::Gone),
            Err(NotIt::Other) => {
                self.refused.reused += 1;
                return Err(NotTracked::Reused);
            }
            Err(NotIt::Io(_)) => {
                self.refused.full += 1;
                return Err(NotTracked::Full);
            }
        };
        self.tasks.insert(pid, Held { fd, start_ns });
        Ok(if replaced { Track::Replaced } else { Track::New })
    }

    /// DEMANDs not tracked since the start, by reason.
    pub fn refused(&self) -> Refused {
        self.refused
    }

    /// How many tasks are held (pidfds open).
    pub fn held(&self) -> usize {
        self.tasks.len()
    }

    /// Task `pid`'s key for a task storage map (its pidfd), if held.
    pub fn key(&self, pid: i32) -> Option<[u8; 4]> {
        self.tasks.get(&pid).map(|h| h.fd.map_key())
    }

    /// Task `pid` is no requester any more.
    pub fn forget(&mut self, pid: i32) {
        self.tasks.remove(&pid);
    }

    /// The held tasks that have exited.
    pub fn exited(&self) -> Vec<i32> {
        self.tasks.values().filter(|h| h.fd.exited()).map(|h| h.fd.pid()).collect()
    }

    /// Write task `pid`'s value in place, under the value's lock
    /// (BPF_F_LOCK), as BPF reads it. Fails for a task not held.
    pub fn write(&self, map: &dyn MapCore, pid: i32, value: &bpf_intf::chameleon_assignment) -> io::Result<()> {
        let key = self.key(pid).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("pid {pid} is not a requester")))?;
        map.update(&key, as_bytes(value), MapFlags::LOCK).map_err(io::Error::other)
    }

    /// Withdraw task `pid`'s object (nr_cpus 0, in place). Nothing to do for
    /// a task not held or gone: the kernel freed its value, if it had one.
    pub fn withdraw(&self, map: &dyn MapCore, pid: i32) -> io::Result<()> {
        let Some(h) = self.tasks.get(&pid) else { return Ok(()) };
        if map.lookup(&h.fd.map_key(), MapFlags::ANY).ok().flatten().is_none() {
            return Ok(());
        }
        match self.write(map, pid, &no_object(pid)) {
            Err(_) if h.fd.exited() => Ok(()),
            r => r,
        }
    }
}

/// Task `pid`'s value with no object (nr_cpus 0).
pub fn no_object(pid: i32) -> bpf_intf::chameleon_assignment {
    bpf_intf::chameleon_assignment {
        lock: bpf_intf::bpf_spin_lock { val: 0 },
        pid,
        nr_cpus: 0,
        generation: 0,
        tax: 0,
        flags: 0,
        cpus: [-1; bpf_intf::chameleon_consts_CHAMELEON_OBJ_MAX_CPUS as usize],
    }
}

#[cfg(test)]
mod tests;
