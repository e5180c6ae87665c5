//! The agent proper: loads and attaches the BPF policy and runs its loop
//! (`scheduler`), turns the policy's reports into object assignments
//! (`assign`), puts the tags in force into the policy's map (`apply_tags`),
//! and takes signals as doorbells (`signals`). The top of the library: it
//! uses every other concept, and none uses it.

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
pub mod park_op;
pub mod requesters;
pub mod rt_attach;
pub mod scheduler;
pub mod signals;
pub mod sleepers;
pub mod tag_worker;
pub mod untagged_load;
