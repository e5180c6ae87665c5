//! Placing execution objects: nodes and their slot order (`node`), the node
//! manager that builds objects in them (`node_manager`), the fair share of
//! the fast contexts (`fast_share`), the automatic tax and its progress
//! sources (`auto_tax`, `progress`), each CPU's steal order (`steal`), where an
//! idle search widens across NUMA nodes (`numa_order`) and a task's allowed
//! CPUs (`affinity`). Pure or nearly so: no BPF program, no
//! socket; host-tested on simulated machines.

pub mod affinity;
pub mod auto_tax;
pub mod cg_shard;
pub mod fast_share;
pub mod node;
pub mod node_manager;
pub mod numa_order;
pub mod progress;
pub mod steal;
