//! Events the BPF policy sends through its ring buffer, decoded for the agent.

use crate::bpf_intf;
use std::fmt;

/// What happened, from `enum chameleon_event_kind` in bpf/intf.h.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    CpuOnline,
    CpuOffline,
    TaskEnable,
    TaskExit,
    Unknown(u32),
}

impl Kind {
    fn from_raw(raw: u32) -> Self {
        match raw {
            bpf_intf::chameleon_event_kind_CHAMELEON_EV_CPU_ONLINE => Kind::CpuOnline,
            bpf_intf::chameleon_event_kind_CHAMELEON_EV_CPU_OFFLINE => Kind::CpuOffline,
            bpf_intf::chameleon_event_kind_CHAMELEON_EV_TASK_ENABLE => Kind::TaskEnable,
            bpf_intf::chameleon_event_kind_CHAMELEON_EV_TASK_EXIT => Kind::TaskExit,
            other => Kind::Unknown(other),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::CpuOnline => "cpu_online",
            Kind::CpuOffline => "cpu_offline",
            Kind::TaskEnable => "task_enable",
            Kind::TaskExit => "task_exit",
            Kind::Unknown(_) => "unknown",
        }
    }
}

/// One decoded ring-buffer record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub kind: Kind,
    pub cpu: i32,
    pub pid: i32,
    pub ts_ns: u64,
    pub cgroup_id: u64,
    pub arg: u64,
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
        Some(Event {
            kind: Kind::from_raw(raw.kind),
            cpu: raw.cpu,
            pid: raw.pid,
            ts_ns: raw.ts_ns,
            cgroup_id: raw.cgroup_id,
            arg: raw.arg,
            comm: String::from_utf8_lossy(&comm_bytes).into_owned(),
        })
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:>12} cpu={}", self.kind.name(), self.cpu)?;
        if self.pid != 0 {
            write!(f, " pid={} comm={} cgroup={}", self.pid, self.comm, self.cgroup_id)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(kind: u32, comm: &[u8]) -> Vec<u8> {
        let mut ev: bpf_intf::chameleon_event = unsafe { std::mem::zeroed() };
        ev.kind = kind;
        ev.cpu = 3;
        ev.pid = 42;
        ev.cgroup_id = 7;
        for (d, s) in ev.comm.iter_mut().zip(comm) {
            *d = *s as _;
        }
        let size = std::mem::size_of_val(&ev);
        let ptr = &ev as *const _ as *const u8;
        unsafe { std::slice::from_raw_parts(ptr, size) }.to_vec()
    }

    #[test]
    fn parses_a_whole_record() {
        let ev = Event::parse(&raw(bpf_intf::chameleon_event_kind_CHAMELEON_EV_CPU_OFFLINE, b"stress-ng\0")).unwrap();
        assert_eq!(ev.kind, Kind::CpuOffline);
        assert_eq!((ev.cpu, ev.pid, ev.cgroup_id), (3, 42, 7));
        assert_eq!(ev.comm, "stress-ng");
    }

    #[test]
    fn refuses_a_short_record() {
        let data = raw(1, b"x");
        assert!(Event::parse(&data[..data.len() - 1]).is_none());
    }

    #[test]
    fn keeps_unknown_kinds_visible() {
        let ev = Event::parse(&raw(999, b"")).unwrap();
        assert_eq!(ev.kind, Kind::Unknown(999));
    }
}
