//! The companion kernel module (`kmod_proxy/`, /dev/chameleon_proxy) seen
//! from the agent: its device (`proxy`: bulk parking, duty-cycle emulation,
//! its counters) and parking CPUs (`park`: the checks and the policy's part).

pub mod park;
pub mod proxy;
