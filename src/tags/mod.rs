//! Cgroup tags, from their text to the tag in force: properties and their
//! checks (`tag`), where they are stored (`store`, an xattr on the cgroup),
//! which one wins (`source`), the rules file (`rules`) and the processes a
//! rule looks at (`cgroup_procs`), and a tag asked for over the control
//! socket (`request`: the NRI plugin's).

pub mod cgroup_dir;
pub mod cgroup_procs;
pub mod request;
pub mod rules;
pub mod source;
pub mod store;
pub mod tag;
