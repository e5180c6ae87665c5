//! Host tests of the BPF policy (not published): `policy` calls its pure
//! helpers (vtime, tax, may-borrow, partial-fuse size, must-split, ...) and
//! checks the layout of the state BPF and the agent share; `role` explores
//! the CPU role state machine. Both through `policy_shim.c`, built by this
//! crate's build.rs from bpf/*.h.

#[cfg(test)]
mod policy;
#[cfg(test)]
mod role;
