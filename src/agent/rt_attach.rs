//! The agent's thread at SCHED_FIFO while it attaches the policy (see
//! RtWhileAttaching).

use tracing::{debug, warn};

/// This thread at SCHED_FIFO for the length of the attach. The attach is the
/// kernel's scx_enable, run in our thread: it switches the tasks into
/// sched_ext one by one, in bypass mode, and until it is done those already
/// switched run only when no task still in the fair class wants their CPU.
/// Under a full load (attach_cycle@mttcg, 6.16.12) that lasted long enough
/// for the kernel's watchdog kworker, switched among the first, to miss its
/// check-in: the attach failed, and the disable that followed waited 20 s
/// for an RCU grace period, rcu_preempt starving the same way. As a real-time
/// thread the loop is not held up by the load. If the policy cannot be set
/// (no CAP_SYS_NICE, RT bandwidth withheld from our cgroup) the attach runs
/// as before.
pub struct RtWhileAttaching {
    policy: libc::c_int,
    param: libc::sched_param,
}

impl RtWhileAttaching {
    pub fn enter() -> Option<RtWhileAttaching> {
        // SAFETY: plain syscalls on this thread (pid 0) with a valid param.
        unsafe {
            let policy = libc::sched_getscheduler(0);
            let mut param: libc::sched_param = std::mem::zeroed();
            if policy < 0 || libc::sched_getparam(0, &mut param) != 0 {
                return None;
            }
            let rt = libc::sched_param { sched_priority: 1 };
            if libc::sched_setscheduler(0, libc::SCHED_FIFO, &rt) != 0 {
                debug!("attach at SCHED_FIFO: {}", std::io::Error::last_os_error());
                return None;
            }
            Some(RtWhileAttaching { policy, param })
        }
    }
}

impl Drop for RtWhileAttaching {
    fn drop(&mut self) {
        // SAFETY: as in enter(), restoring what it read.
        if unsafe { libc::sched_setscheduler(0, self.policy, &self.param) } != 0 {
            warn!("attach: cannot restore the scheduling policy: {}", std::io::Error::last_os_error());
        }
    }
}
