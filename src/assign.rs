//! Turns the policy's reports into object assignments and publishes them:
//! a tagged task appears (DEMAND) -> it gets an object; it exits, or a CPU of
//! its object goes offline -> the object is withdrawn and its CPUs go to
//! whoever waits. Data flows one way: tag -> map -> BPF -> event -> here -> map.

use crate::bpf_intf;
use crate::event::{Event, Kind};
use crate::exec_object::{FirstFit, Object};
use crate::scheduler::as_bytes;
use crate::tag::Props;
use libbpf_rs::{MapCore, MapFlags};
use std::collections::HashMap;
use tracing::warn;

pub struct Assigner {
    objects: FirstFit,
    /// Tagged cgroups: id -> properties.
    tags: HashMap<u64, Props>,
    /// Tagged tasks alive: pid -> their cgroup's properties.
    requesters: HashMap<i32, Props>,
}

impl Assigner {
    pub fn new(objects: FirstFit, tags: HashMap<u64, Props>) -> Self {
        Assigner { objects, tags, requesters: HashMap::new() }
    }

    /// The BPF value for a task's object.
    fn value(obj: &Object, props: Option<&Props>) -> bpf_intf::chameleon_assignment {
        let mut a = bpf_intf::chameleon_assignment {
            nr_cpus: obj.cpus.len() as u32,
            generation: obj.gen,
            tax: props.map_or(100, |p| p.tax),
            weight: props.map_or(1, |p| p.weight),
            cpus: [-1; bpf_intf::chameleon_consts_CHAMELEON_OBJ_MAX_CPUS as usize],
        };
        for (slot, &c) in a.cpus.iter_mut().zip(&obj.cpus) {
            *slot = c as i32;
        }
        a
    }

    /// Publish (or withdraw, with None) a task's object. One hash-map update
    /// replaces the whole value, so BPF never sees half an object.
    fn publish(&self, map: &dyn MapCore, pid: i32, obj: Option<&Object>) {
        let key = pid.to_ne_bytes();
        match obj {
            Some(o) => {
                let value = Self::value(o, self.requesters.get(&pid));
                println!("assign pid={} cpus={:?} gen={}", pid, o.cpus, o.gen);
                if let Err(e) = map.update(&key, as_bytes(&value), MapFlags::ANY) {
                    warn!("publishing the object of pid {pid}: {e}");
                }
            }
            None => {
                println!("unassign pid={pid}");
                // ENOENT is fine: the task never had an object.
                let _ = map.delete(&key);
            }
        }
    }

    /// A task no longer wants (or may have) an object; returns what that frees up for others.
    fn withdraw(&mut self, map: &dyn MapCore, pid: i32) -> Vec<(i32, Object)> {
        if self.requesters.remove(&pid).is_none() {
            return Vec::new();
        }
        self.publish(map, pid, None);
        self.objects.release(pid)
    }

    pub fn handle(&mut self, ev: &Event, map: &dyn MapCore) {
        let given = match ev.kind {
            Kind::Demand => match self.tags.get(&ev.cgroup_id).copied() {
                Some(props) if ev.level > 0 => {
                    self.requesters.insert(ev.pid, props);
                    match self.objects.request(ev.pid, props.level) {
                        Some(obj) => vec![(ev.pid, obj)],
                        None => Vec::new(),
                    }
                }
                // Moved out of every tagged cgroup: it gives its object up.
                _ => self.withdraw(map, ev.pid),
            },
            Kind::TaskExit => self.withdraw(map, ev.pid),
            Kind::CpuOffline if ev.cpu >= 0 => {
                let (revoked, given) = self.objects.cpu_offline(ev.cpu as usize);
                for pid in revoked {
                    self.publish(map, pid, None);
                }
                given
            }
            Kind::CpuOnline if ev.cpu >= 0 => self.objects.cpu_online(ev.cpu as usize),
            _ => Vec::new(),
        };
        for (pid, obj) in given {
            self.publish(map, pid, Some(&obj));
        }
    }
}
