//! A client's resumption tickets, per server (PROTOCOL.md §4.7-4.9).

use mpcore::ResumptionTicket;
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Tickets kept per server: a server gives one per connection, and each is offered once.
const PER_SERVER: usize = 4;

/// The stored form's first byte.
const FORMAT: u8 = 1;

/// The resumption tickets a client's servers gave it, for its next connections to them.
///
/// Given to [`Options::tickets`](crate::Options::tickets), an endpoint files every ticket its
/// connections receive here and offers one to its next connection to the same server (each
/// ticket once, the newest first, none past its lifetime). A clone is the same store: one
/// store can serve several endpoints. An application keeps them across restarts with
/// [`to_bytes`](Self::to_bytes) and [`from_bytes`](Self::from_bytes) (they hold the tickets'
/// secrets: store them as the app's other credentials).
///
/// ```
/// let store = mpudp::TicketStore::new();
/// let saved = store.to_bytes();
/// let again = mpudp::TicketStore::from_bytes(&saved).expect("what to_bytes wrote");
/// assert_eq!(again.len(), 0);
/// ```
#[derive(Clone, Debug, Default)]
pub struct TicketStore(Arc<Mutex<HashMap<SocketAddr, VecDeque<ResumptionTicket>>>>);

fn unix_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl TicketStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Files a ticket for its server (the oldest of that server's goes beyond 4).
    pub fn insert(&self, t: ResumptionTicket) {
        let Ok(mut m) = self.0.lock() else { return };
        let q = m.entry(t.server).or_default();
        if q.len() == PER_SERVER {
            q.pop_back();
        }
        q.push_front(t);
    }

    /// The newest ticket for `server` still within its lifetime, taken out (a ticket is
    /// offered once); expired ones are dropped.
    pub fn take(&self, server: SocketAddr) -> Option<ResumptionTicket> {
        let now = unix_ms();
        let mut m = self.0.lock().ok()?;
        let q = m.get_mut(&server)?;
        q.retain(|t| t.expires_unix_ms() > now);
        let t = q.pop_front();
        if q.is_empty() {
            m.remove(&server);
        }
        t
    }

    /// The newest ticket within its lifetime from a server that signs with one of `keys` (the
    /// keys the client trusts: the service's, whatever its address now, as DNS or anycast
    /// move it), else the newest for `server`'s address; taken out. Expired ones are dropped.
    pub fn take_for(&self, server: SocketAddr, keys: &[[u8; 32]]) -> Option<ResumptionTicket> {
        let now = unix_ms();
        let mut m = self.0.lock().ok()?;
        let by_key = m
            .iter()
            .flat_map(|(a, q)| q.iter().enumerate().map(move |(i, t)| (*a, i, t)))
            .filter(|(_, _, t)| t.expires_unix_ms() > now && t.identity.is_some_and(|k| keys.contains(&k)))
            .max_by_key(|(_, _, t)| t.received_unix_ms)
            .map(|(a, i, _)| (a, i));
        let Some((addr, i)) = by_key else {
            drop(m);
            return self.take(server);
        };
        let q = m.get_mut(&addr)?;
        let t = q.remove(i);
        q.retain(|t| t.expires_unix_ms() > now);
        if q.is_empty() {
            m.remove(&addr);
        }
        t
    }

    /// Tickets held, every server's.
    pub fn len(&self) -> usize {
        self.0.lock().map_or(0, |m| m.values().map(VecDeque::len).sum())
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every ticket as bytes: format (1), count (2), then each ticket's
    /// [`ResumptionTicket::to_bytes`] with its length (2).
    pub fn to_bytes(&self) -> Vec<u8> {
        let Ok(m) = self.0.lock() else { return vec![FORMAT, 0, 0] };
        let all: Vec<Vec<u8>> = m.values().flat_map(|q| q.iter().rev().map(ResumptionTicket::to_bytes)).collect();
        let mut b = vec![FORMAT];
        b.extend_from_slice(&(all.len() as u16).to_be_bytes());
        for t in all {
            b.extend_from_slice(&(t.len() as u16).to_be_bytes());
            b.extend_from_slice(&t);
        }
        b
    }

    /// What [`to_bytes`](Self::to_bytes) wrote; `None` for anything else.
    pub fn from_bytes(b: &[u8]) -> Option<Self> {
        let (&format, rest) = b.split_first()?;
        if format != FORMAT || rest.len() < 2 {
            return None;
        }
        let n = u16::from_be_bytes([rest[0], rest[1]]);
        let mut at = &rest[2..];
        let store = Self::new();
        for _ in 0..n {
            let len = usize::from(u16::from_be_bytes([*at.first()?, *at.get(1)?]));
            let t = ResumptionTicket::from_bytes(at.get(2..2 + len)?)?;
            store.insert(t);
            at = &at[2 + len..];
        }
        at.is_empty().then_some(store)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ticket(server: &str, received_unix_ms: u64, id: u8) -> ResumptionTicket {
        ResumptionTicket {
            server: server.parse().unwrap(),
            received_unix_ms,
            lifetime_s: 7_200,
            age_add: 1,
            psk: [id; 32],
            suite: 2,
            identity: Some([id; 32]),
            ticket: vec![id; 115],
            route: id.is_multiple_of(2).then_some(id),
        }
    }

    #[test]
    fn newest_first_once_each_none_expired_and_bytes_round_trip() {
        let s = TicketStore::new();
        let now = unix_ms();
        for id in 1..=4 {
            s.insert(ticket("10.0.0.1:5201", now, id));
        }
        // The newest, but received 3 h ago: past its 2 h.
        s.insert(ticket("10.0.0.1:5201", now - 10_800_000, 5));
        s.insert(ticket("[::1]:5201", now, 9));
        assert_eq!(s.len(), 5, "four per server: the oldest went");
        let again = TicketStore::from_bytes(&s.to_bytes()).unwrap();
        assert_eq!(again.len(), 5);
        let a: SocketAddr = "10.0.0.1:5201".parse().unwrap();
        for want in [4, 3, 2] {
            assert_eq!(again.take(a).unwrap().psk, [want; 32]);
        }
        assert!(again.take(a).is_none(), "each once; the expired one never");
        assert_eq!(again.take("[::1]:5201".parse().unwrap()).unwrap().psk, [9; 32]);
        let b = s.to_bytes();
        for cut in 0..b.len() {
            assert!(TicketStore::from_bytes(&b[..cut]).is_none(), "cut at {cut}");
        }
    }

    #[test]
    fn a_trusted_key_finds_its_servers_newest_ticket_at_any_address() {
        let s = TicketStore::new();
        let now = unix_ms();
        s.insert(ticket("10.0.0.1:5201", now - 1_000, 1));
        s.insert(ticket("10.0.0.2:5201", now, 1));
        s.insert(ticket("10.0.0.3:5201", now, 2));
        let elsewhere: SocketAddr = "192.0.2.1:443".parse().unwrap();
        // Key 1's newest (10.0.0.2), wherever the service is now.
        assert_eq!(s.take_for(elsewhere, &[[1; 32]]).unwrap().server, "10.0.0.2:5201".parse().unwrap());
        assert_eq!(s.take_for(elsewhere, &[[1; 32]]).unwrap().server, "10.0.0.1:5201".parse().unwrap());
        // No trusted key: by address only.
        assert!(s.take_for(elsewhere, &[[1; 32]]).is_none());
        assert!(s.take_for(elsewhere, &[]).is_none());
        assert_eq!(s.take_for("10.0.0.3:5201".parse().unwrap(), &[]).unwrap().psk, [2; 32]);
        assert!(s.is_empty());
    }
}
