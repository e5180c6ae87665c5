//! Events the BPF policy sends through its ring buffer, decoded for the agent.

use crate::bpf_intf;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What happened, from `enum chameleon_event_kind` in bpf/intf.h.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    CpuOnline,
    CpuOffline,
    TaskExit,
    Demand,
    Fuse,
    PartialFuse,
    Split,
    Sleep,
    Wake,
    Unknown(u32),
}

impl Kind {
    fn from_raw(raw: u32) -> Self {
        match raw {
            bpf_intf::chameleon_event_kind_CHAMELEON_EV_CPU_ONLINE => Kind::CpuOnline,
            bpf_intf::chameleon_event_kind_CHAMELEON_EV_CPU_OFFLINE => Kind::CpuOffline,
            bpf_intf::chameleon_event_kind_CHAMELEON_EV_TASK_EXIT => Kind::TaskExit,
            bpf_intf::chameleon_event_kind_CHAMELEON_EV_DEMAND => Kind::Demand,
            bpf_intf::chameleon_event_kind_CHAMELEON_EV_FUSE => Kind::Fuse,
            bpf_intf::chameleon_event_kind_CHAMELEON_EV_PARTIAL_FUSE => Kind::PartialFuse,
            bpf_intf::chameleon_event_kind_CHAMELEON_EV_SPLIT => Kind::Split,
            bpf_intf::chameleon_event_kind_CHAMELEON_EV_SLEEP => Kind::Sleep,
            bpf_intf::chameleon_event_kind_CHAMELEON_EV_WAKE => Kind::Wake,
            other => Kind::Unknown(other),
        }
    }

    pub fn from_name(name: &str) -> Kind {
        [
            Kind::CpuOnline,
            Kind::CpuOffline,
            Kind::TaskExit,
            Kind::Demand,
            Kind::Fuse,
            Kind::PartialFuse,
            Kind::Split,
            Kind::Sleep,
            Kind::Wake,
        ]
        .into_iter()
        .find(|k| k.name() == name)
        .unwrap_or(Kind::Unknown(0))
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::CpuOnline => "cpu_online",
            Kind::CpuOffline => "cpu_offline",
            Kind::TaskExit => "task_exit",
            Kind::Demand => "demand",
            Kind::Fuse => "fuse",
            Kind::PartialFuse => "partial_fuse",
            Kind::Split => "split",
            Kind::Sleep => "sleep",
            Kind::Wake => "wake",
            Kind::Unknown(_) => "unknown",
        }
    }
}

/// A task's name as one `key=value` token: tasks name themselves
/// (prctl(PR_SET_NAME)), so a space, '=', a newline or an escape sequence in
/// it must not forge fields or lines in our text output. Bytes outside
/// printable ASCII, space, '=' and '\\' become \xNN.
pub fn escape_comm(comm: &str) -> String {
    let mut out = String::with_capacity(comm.len());
    for b in comm.bytes() {
        if b.is_ascii_graphic() && b != b'=' && b != b'\\' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Why an object split, from `enum chameleon_split_reason`.
pub fn split_reason(raw: u32) -> &'static str {
    match raw {
        bpf_intf::chameleon_split_reason_CHAMELEON_SPLIT_TICK => "tick",
        bpf_intf::chameleon_split_reason_CHAMELEON_SPLIT_WAKE => "wake",
        bpf_intf::chameleon_split_reason_CHAMELEON_SPLIT_SLEEP => "sleep",
        bpf_intf::chameleon_split_reason_CHAMELEON_SPLIT_PREEMPT => "preempt",
        bpf_intf::chameleon_split_reason_CHAMELEON_SPLIT_EXIT => "exit",
        bpf_intf::chameleon_split_reason_CHAMELEON_SPLIT_OFFLINE => "offline",
        bpf_intf::chameleon_split_reason_CHAMELEON_SPLIT_RETAG => "retag",
        bpf_intf::chameleon_split_reason_CHAMELEON_SPLIT_BOUND => "bound",
        bpf_intf::chameleon_split_reason_CHAMELEON_SPLIT_MIGRATE => "migrate",
        bpf_intf::chameleon_split_reason_CHAMELEON_SPLIT_GROW => "grow",
        bpf_intf::chameleon_split_reason_CHAMELEON_SPLIT_AWAY => "away",
        _ => "unknown",
    }
}

/// The kind travels by name in JSON ("fuse", "split", ...).
impl Serialize for Kind {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Kind {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Kind, D::Error> {
        Ok(Kind::from_name(&String::deserialize(d)?))
    }
}

/// One decoded ring-buffer record; also the JSON of the event stream
/// (`scx_chameleon events --json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub kind: Kind,
    pub cpu: i32,
    pub pid: i32,
    pub reason: u32,
    pub ts_ns: u64,
    pub cgroup_id: u64,
    pub latency_ns: u64,
    pub cost_ns: u64,
    /// FUSE/SPLIT: the slowest waited-for CPU's own work, timed on it.
    #[serde(default)]
    pub local_ns: u64,
    pub run_ns: u64,
    pub fused_ns: u64,
    /// Task events: when the task started (its start_boottime, ns since
    /// boot): with the pid, which task it was (pidfd.rs, `open_as`).
    #[serde(default)]
    pub start_ns: u64,
    pub level: u32,
    pub cpus: Vec<i32>,
    /// The latency is a lower bound: the next decision came first.
    pub superseded: bool,
    pub comm: String,
}

impl Event {
    /// Decode a raw record. The BPF side always writes whole records; a short
    /// one means a version mismatch between agent and policy, so it is refused.
    pub fn parse(data: &[u8]) -> Option<Event> {
        if data.len() < std::mem::size_of::<bpf_intf::chameleon_event>() {
            return None;
        }
        // SAFETY: the length was checked and chameleon_event is plain old data.
        let raw: bpf_intf::chameleon_event =
            unsafe { std::ptr::read_unaligned(data.as_ptr() as *const _) };
        let comm_bytes: Vec<u8> = raw
            .comm
            .iter()
            .map(|&c| c as u8)
            .take_while(|&c| c != 0)
            .collect();
        let nr = (raw.nr_cpus as usize).min(raw.cpus.len());
        Some(Event {
            kind: Kind::from_raw(raw.kind),
            cpu: raw.cpu,
            pid: raw.pid,
            reason: raw.reason,
            ts_ns: raw.ts_ns,
            cgroup_id: raw.cgroup_id,
            latency_ns: raw.latency_ns,
            cost_ns: raw.cost_ns,
            local_ns: raw.local_ns as u64,
            run_ns: raw.run_ns,
            fused_ns: raw.fused_ns,
            start_ns: raw.start_ns,
            level: raw.level,
            cpus: raw.cpus[..nr].to_vec(),
            superseded: raw.flags & bpf_intf::chameleon_event_flags_CHAMELEON_EVF_SUPERSEDED != 0,
            comm: String::from_utf8_lossy(&comm_bytes).into_owned(),
        })
    }
}

fn cpu_list(cpus: &[i32]) -> String {
    cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

/// One line per event, key=value, stable for scripts (tests and bench parse it).
impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>12} cpu={}", self.kind.name(), self.cpu)?;
        match self.kind {
            Kind::Fuse | Kind::PartialFuse | Kind::Split => {
                write!(f, " pid={} cgroup={} cpus={}", self.pid, self.cgroup_id, cpu_list(&self.cpus))?;
                if self.kind == Kind::PartialFuse {
                    write!(f, " of={}", self.level)?;
                }
                if self.kind == Kind::Split {
                    write!(f, " reason={} fused_ns={}", split_reason(self.reason), self.run_ns)?;
                }
                write!(f, " latency_ns={} cost_ns={} local_ns={}", self.latency_ns, self.cost_ns, self.local_ns)?;
                if self.superseded {
                    write!(f, " superseded")?;
                }
                write!(f, " ts_ns={}", self.ts_ns)
            }
            Kind::CpuOnline | Kind::CpuOffline => Ok(()),
            _ => {
                write!(f, " pid={} comm={} cgroup={}", self.pid, escape_comm(&self.comm), self.cgroup_id)?;
                match self.kind {
                    Kind::Demand => write!(f, " level={}", self.level),
                    Kind::TaskExit => write!(f, " tagged run_ns={} fused_ns={}", self.run_ns, self.fused_ns),
                    _ => Ok(()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
