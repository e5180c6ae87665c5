use super::*;

/// Simulates the loop's wakeups for `secs` seconds: (wakeups, ticks).
/// Each sleep is what poll() is asked for (poll_ms), each wakeup costs
/// the loop `WORK` (a few hundred microseconds under TCG).
fn wakeups(period_ms: Option<u64>, secs: u64) -> (u32, u32) {
    const WORK: Duration = Duration::from_micros(300);
    let every = TICK_BUSY;
    let (mut now, mut last_tick, mut last_rot) = (Duration::ZERO, Duration::ZERO, Duration::ZERO);
    let (mut woke, mut ticks) = (0, 0);
    let mut max_gap = Duration::ZERO;
    while now < Duration::from_secs(secs) {
        let tick_in = every.saturating_sub(now - last_tick);
        let rot = period_ms.map(|p| Duration::from_millis(p).saturating_sub(now - last_rot));
        now += Duration::from_millis(poll_ms(next_wakeup(tick_in, every, rot)) as u64);
        woke += 1;
        let rotated = period_ms.is_some_and(|p| now - last_rot >= Duration::from_millis(p));
        if rotated {
            last_rot = now;
        }
        if tick_due(now - last_tick, every, rotated) {
            max_gap = max_gap.max(now - last_tick);
            last_tick = now;
            ticks += 1;
        }
        now += WORK;
    }
    // No tick waits more than one and a half ticks (and a wakeup's work).
    assert!(max_gap <= every + every / 2 + WORK, "a tick waited {max_gap:?}");
    (woke, ticks)
}

#[test]
fn a_30_ms_rotation_carries_the_tick() {
    // 20 ms ticks alone: 50 wakeups a second; with a 30 ms rotation
    // 33, each a tick and a rotation, not 50 + 33.
    // Not 194: poll()'s timeout rounded down spun through the last
    // fraction of a millisecond (poll_ms).
    assert_eq!(wakeups(None, 1), (50, 50));
    let (woke, ticks) = wakeups(Some(30), 3);
    assert_eq!((woke, ticks), (100, 100));
    // A rotation far apart keeps the tick on its own clock.
    let (woke, ticks) = wakeups(Some(1000), 3);
    assert!(woke <= 153 && ticks >= 147, "{woke} wakeups, {ticks} ticks");
    let (woke, _) = wakeups(Some(100), 1);
    assert!(woke <= 51, "{woke}");
}
