//! The connections' qlog event logs in a simulation (PROTOCOL.md §13), in virtual time:
//! turned on by `Config::logging.qlog` on either side, taken from every connection after each step, so
//! a connection's log outlives it.

use mpcore::{ConnHandle, Endpoint};

/// Every connection's log so far: (client side, handle, JSON-SEQ text).
#[derive(Debug, Default)]
pub struct QlogStore {
    logs: Vec<(bool, ConnHandle, Vec<u8>)>,
    handles: Vec<ConnHandle>,
}

impl QlogStore {
    /// Takes what every connection of both endpoints logged since the last call.
    pub fn collect(&mut self, client: &mut Endpoint, server: &mut Endpoint) {
        for (is_client, ep) in [(true, client), (false, server)] {
            if !ep.config().logging.qlog {
                continue;
            }
            self.handles.clear();
            self.handles.extend(ep.handles());
            for &h in &self.handles {
                let Some(c) = ep.conn_mut(h) else { continue };
                let k = match self.logs.iter().position(|l| l.0 == is_client && l.1 == h) {
                    Some(k) => k,
                    None => {
                        self.logs.push((is_client, h, Vec::new()));
                        self.logs.len() - 1
                    }
                };
                c.take_qlog(&mut self.logs[k].2);
            }
            // Connections forgotten in the step: their last records.
            for (h, tail) in ep.take_forgotten_qlogs() {
                match self.logs.iter_mut().find(|l| l.0 == is_client && l.1 == h) {
                    Some(l) => l.2.extend_from_slice(&tail),
                    None => self.logs.push((is_client, h, tail)),
                }
            }
        }
    }

    /// The log of connection `h` of the client (`client`) or the server.
    pub fn log(&self, client: bool, h: ConnHandle) -> Option<&[u8]> {
        self.logs.iter().find(|l| l.0 == client && l.1 == h).map(|l| l.2.as_slice())
    }

    /// Every log: (client side, handle, text).
    pub fn all(&self) -> impl Iterator<Item = (bool, ConnHandle, &[u8])> + '_ {
        self.logs.iter().map(|l| (l.0, l.1, l.2.as_slice()))
    }
}
