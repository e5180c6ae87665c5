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
//! Invariant: a pid is held here exactly while it is one of the Assigner's
//! requesters (`track` on DEMAND, `forget` when it leaves).

use crate::bpf_intf::{self, as_bytes};
use crate::pidfd::TaskFd;
use libbpf_rs::{MapCore, MapFlags};
use std::collections::HashMap;
use std::io;

#[derive(Default)]
pub struct ObjectMap {
    tasks: HashMap<i32, TaskFd>,
}

/// What `track` found.
#[derive(Debug, PartialEq, Eq)]
pub enum Track {
    /// Held already, and still the same task.
    Known,
    /// Held from now.
    New,
    /// The pid was held for a task that has exited (its exit event lost):
    /// the newcomer is held from now; the old task's state must go.
    Replaced,
}

impl ObjectMap {
    /// Hold task `pid` (it asked for an object). Err: it has gone already.
    pub fn track(&mut self, pid: i32) -> io::Result<Track> {
        let replaced = match self.tasks.get(&pid) {
            Some(t) if !t.exited() => return Ok(Track::Known),
            Some(_) => true,
            None => false,
        };
        self.tasks.remove(&pid);
        self.tasks.insert(pid, TaskFd::open(pid)?);
        Ok(if replaced { Track::Replaced } else { Track::New })
    }

    /// Task `pid` is no requester any more.
    pub fn forget(&mut self, pid: i32) {
        self.tasks.remove(&pid);
    }

    /// The held tasks that have exited.
    pub fn exited(&self) -> Vec<i32> {
        self.tasks.values().filter(|t| t.exited()).map(TaskFd::pid).collect()
    }

    /// Write task `pid`'s value in place, under the value's lock
    /// (BPF_F_LOCK), as BPF reads it. Fails for a task not held.
    pub fn write(&self, map: &dyn MapCore, pid: i32, value: &bpf_intf::chameleon_assignment) -> io::Result<()> {
        let t = self.tasks.get(&pid).ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("pid {pid} is not a requester")))?;
        map.update(&t.map_key(), as_bytes(value), MapFlags::LOCK).map_err(io::Error::other)
    }

    /// Withdraw task `pid`'s object (nr_cpus 0, in place). Nothing to do for
    /// a task not held or gone: the kernel freed its value, if it had one.
    pub fn withdraw(&self, map: &dyn MapCore, pid: i32) -> io::Result<()> {
        let Some(t) = self.tasks.get(&pid) else { return Ok(()) };
        if map.lookup(&t.map_key(), MapFlags::ANY).ok().flatten().is_none() {
            return Ok(());
        }
        match self.write(map, pid, &no_object(pid)) {
            Err(_) if t.exited() => Ok(()),
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
