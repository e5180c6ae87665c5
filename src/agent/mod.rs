//! The agent proper: starts and stops (`scheduler`, with the settings in
//! `opts`), loads and attaches the BPF policy (`policy_setup`) and runs its
//! loop (`agent_loop`, reading the policy's .bss through `policy_state`),
//! turns the policy's reports into object assignments (`assign`), puts the
//! tags in force into the policy's map (`apply_tags`), routes control
//! requests to the loop or the helper threads (`router`, `inbox`), and
//! takes signals as doorbells (`signals`). The top of the library: it uses
//! every other concept, and none uses it.

pub mod agent_loop;
pub mod apply_tags;
pub mod assign;
pub mod auto_taxes;
pub mod cpu_presence;
pub mod decisions;
pub mod every;
pub mod fd_budget;
pub mod inbox;
pub mod module_worker;
pub mod object_map;
pub mod opts;
pub mod park_op;
pub mod policy_setup;
pub mod policy_state;
pub mod requesters;
pub mod router;
pub mod rt_attach;
pub mod scheduler;
pub mod signals;
pub mod sleepers;
pub mod tag_worker;
pub mod untagged_load;
