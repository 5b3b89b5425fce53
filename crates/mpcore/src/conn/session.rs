//! What the first handshake agreed with the peer: the keys, both tokens, the peer's
//! transport parameters and the address the connection was opened to, and (client) the
//! handshake itself until it ends. The connection reads them; only the handshake's outcome
//! (`Connection::install_keys`, `set_peer_params`) writes them.

use crate::crypto::PacketKey;
use crate::handshake;
use crate::wire::TransportParams;
use std::net::SocketAddr;

pub(super) struct Keys {
    pub send: PacketKey,
    pub recv: PacketKey,
    pub local_key: u64,
    pub remote_key: u64,
    /// The resumption secret (a client derives its tickets' PSKs from it).
    pub resumption: [u8; 32],
}

impl Keys {
    /// The fast-join HMAC keys, made when a join needs them: joins are rare, and an idle
    /// connection does not keep two HMAC states (352 bytes, issue 52).
    pub fn fast(&self) -> fastjoin::Keys {
        fastjoin::Keys::new(self.local_key, self.remote_key)
    }
}

pub(super) struct Session {
    /// Client: the first handshake, until the server's first short packet.
    pub hs: Option<Box<handshake::Client>>,
    pub keys: Option<Keys>,
    pub local_token: Option<u32>,
    pub remote_token: u32,
    /// The address the connection was opened to (the client's view of the server): where
    /// the client's joins go.
    pub peer_addr: SocketAddr,
    pub peer_params: TransportParams,
}

impl Session {
    pub fn new(peer_addr: SocketAddr) -> Self {
        Self {
            hs: None,
            keys: None,
            local_token: None,
            remote_token: 0,
            peer_addr,
            peer_params: TransportParams::default(),
        }
    }

    /// The heap the client's first handshake holds, while it lives.
    pub fn heap_bytes(&self) -> usize {
        self.hs.as_ref().map_or(0, |h| std::mem::size_of::<handshake::Client>() + h.heap_bytes())
    }
}
