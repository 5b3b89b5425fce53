//! The server's test slots and who may hold them (issue 52): no slot held by a client that
//! does not use it.
//!
//! - **Shares.** At most `--max-tests` tests at once; at most half of them (at least one)
//!   from one address, and at most three quarters (at least one) from one network (a /24 of
//!   IPv4, a /56 of IPv6), so that a few addresses cannot take them all.
//! - **Eviction.** When every slot is taken and a client asks, the test that has been silent
//!   longest, if for at least [`EVICT_AFTER`], is ended (its client is told why) and the slot
//!   is the newcomer's. A client in its `--wait` between requests holds its slot only while
//!   nobody else waits for one.
//! - **Declared silence** is bounded by the server (`--max-silence`, see `run::server`), and
//!   silence is counted in the time the server ran (a frozen server does not blame its client).

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// A test silent this long may be ended for a client that waits for a slot: longer than any
/// gap between the bursts of a request (300 ms by default), shorter than the wait between
/// requests (5 s by default).
pub const EVICT_AFTER: Duration = Duration::from_secs(2);

/// The longest silence a test's workload may declare (a burst gap, or the wait between
/// requests) unless the server says otherwise (`--max-silence`): seconds, not the hour a
/// client may ask for.
pub const MAX_SILENCE: Duration = Duration::from_secs(30);

/// What a running test shares with the slots: when its client was last heard, and the
/// signal that ends it.
#[derive(Debug)]
pub struct TestActivity {
    epoch: Instant,
    /// Milliseconds since `epoch` of the client's last frame.
    last_heard_ms: AtomicU64,
    evicted: AtomicBool,
    notify: Notify,
}

impl TestActivity {
    pub fn new() -> Self {
        Self {
            epoch: Instant::now(),
            last_heard_ms: AtomicU64::new(0),
            evicted: AtomicBool::new(false),
            notify: Notify::new(),
        }
    }

    /// The client was heard from (a frame of its arrived).
    pub fn heard(&self) {
        self.last_heard_ms.store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// How long the client has been silent.
    pub fn silent_for(&self) -> Duration {
        let at = Duration::from_millis(self.last_heard_ms.load(Ordering::Relaxed));
        self.epoch.elapsed().saturating_sub(at)
    }

    fn evict(&self) {
        self.evicted.store(true, Ordering::Relaxed);
        self.notify.notify_one();
    }

    /// Completes when the test is ended for another client (at once if it was already).
    pub async fn evicted(&self) {
        while !self.evicted.load(Ordering::Relaxed) {
            self.notify.notified().await;
        }
    }
}

impl Default for TestActivity {
    fn default() -> Self {
        Self::new()
    }
}

/// The network an address belongs to for the shares: its /24 (IPv4) or /56 (IPv6).
fn network(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(a) => {
            let o = a.octets();
            IpAddr::from([o[0], o[1], o[2], 0])
        }
        IpAddr::V6(a) => {
            let mut o = a.octets();
            o[7..].fill(0);
            IpAddr::from(o)
        }
    }
}

#[derive(Debug)]
struct Running {
    id: u64,
    ip: IpAddr,
    activity: Arc<TestActivity>,
}

/// A slot given: its id (to give it back) and the test's activity.
#[derive(Debug)]
pub struct Slot {
    pub id: u64,
    pub activity: Arc<TestActivity>,
}

/// The tests a server runs at once.
#[derive(Debug, Default)]
pub struct Slots {
    running: Vec<Running>,
    next: u64,
}

impl Slots {
    /// A slot for a client at `ip`, if the shares allow it, ending the longest-silent test
    /// whose slot would let them (see the module's rules); `None`: the server is busy for it.
    pub fn take(&mut self, ip: IpAddr, max: usize) -> Option<Slot> {
        // Whether `ip` may have a slot with test `gone` (an index) ended first.
        let fits = |running: &[Running], gone: Option<usize>| {
            let left = || running.iter().enumerate().filter(|(k, _)| Some(*k) != gone).map(|(_, t)| t);
            left().count() < max
                && left().filter(|t| t.ip == ip).count() < (max / 2).max(1)
                && left().filter(|t| network(t.ip) == network(ip)).count() < (max * 3 / 4).max(1)
        };
        if !fits(&self.running, None) {
            let mut silent: Vec<(Duration, usize)> = self
                .running
                .iter()
                .enumerate()
                .map(|(k, t)| (t.activity.silent_for(), k))
                .filter(|(d, _)| *d >= EVICT_AFTER)
                .collect();
            silent.sort_unstable_by(|a, b| b.cmp(a));
            let (_, k) = silent.into_iter().find(|&(_, k)| fits(&self.running, Some(k)))?;
            self.running.swap_remove(k).activity.evict();
        }
        self.next += 1;
        let activity = Arc::new(TestActivity::new());
        self.running.push(Running { id: self.next, ip, activity: activity.clone() });
        Some(Slot { id: self.next, activity })
    }

    /// The test of slot `id` ended (a test ended for another client gave its slot already).
    pub fn give_back(&mut self, id: u64) {
        self.running.retain(|t| t.id != id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn shares_per_address_and_per_network() {
        let mut s = Slots::default();
        let a = s.take(ip("10.0.0.1"), 4).unwrap();
        assert!(s.take(ip("10.0.0.1"), 4).is_some());
        assert!(s.take(ip("10.0.0.1"), 4).is_none(), "half the slots from one address");
        assert!(s.take(ip("10.0.0.2"), 4).is_some());
        assert!(s.take(ip("10.0.0.3"), 4).is_none(), "three quarters from one /24");
        assert!(s.take(ip("10.0.1.1"), 4).is_some(), "another network takes the last");
        s.give_back(a.id);
        assert!(s.take(ip("10.0.0.3"), 4).is_some());
        let mut one = Slots::default();
        assert!(one.take(ip("10.0.0.1"), 1).is_some());
        assert!(one.take(ip("10.1.0.1"), 1).is_none(), "a busy one-test server");
        assert_eq!(network(ip("2001:db8:1:2:3::1")), ip("2001:db8:1::"));
    }

    #[tokio::test]
    async fn a_full_server_ends_its_longest_silent_test_for_a_newcomer() {
        let mut s = Slots::default();
        let quiet = s.take(ip("10.0.0.1"), 2).unwrap();
        let busy = s.take(ip("10.0.1.1"), 2).unwrap();
        assert!(s.take(ip("10.0.2.1"), 2).is_none(), "nobody silent for long enough");
        let mut shared = Slots::default();
        let _a = shared.take(ip("10.0.0.1"), 4).unwrap();
        let b = shared.take(ip("10.0.0.2"), 4).unwrap();
        let _c = shared.take(ip("10.0.0.3"), 4).unwrap();
        tokio::time::sleep(EVICT_AFTER + Duration::from_millis(50)).await;
        busy.activity.heard();
        let newcomer = s.take(ip("10.0.2.1"), 2).expect("the silent test's slot");
        // A slot free, but the newcomer's network has its share: one of that network's silent
        // tests makes room.
        b.activity.heard();
        assert!(shared.take(ip("10.0.0.4"), 4).is_some(), "a silent test of its /24 ended");
        assert!(b.activity.silent_for() < EVICT_AFTER && !b.activity.evicted.load(Ordering::Relaxed));
        assert_eq!(shared.running.len(), 3);
        tokio::time::timeout(Duration::from_secs(1), quiet.activity.evicted()).await.expect("told");
        assert!(!busy.activity.evicted.load(Ordering::Relaxed));
        s.give_back(quiet.id);
        assert_eq!(s.running.len(), 2, "an evicted test's slot is the newcomer's already");
        s.give_back(newcomer.id);
        assert_eq!(s.running.len(), 1);
    }
}
