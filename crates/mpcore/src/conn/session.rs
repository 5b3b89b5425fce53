//! What the first handshake agreed with the peer: the keys, both tokens, the peer's
//! transport parameters and the address the connection was opened to, and (client) the
//! handshake itself until it ends. The connection reads them; only the handshake's outcome
//! (`Session::install`, `Connection::set_peer_params`) writes them.

use super::events::Side;
use crate::crypto::{self, PacketKey, Secrets};
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
    /// The largest datagram either side allows: the path MTU search's ceiling.
    pub fn mss(&self, config: &crate::config::Config) -> usize {
        config.transport.max_datagram_size.min(self.peer_params.max_datagram_size as usize)
    }

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

    /// Takes `side`'s keys from the connection's secrets (in clear for a test that asks for
    /// it, `no_encryption`) and both tokens (ours 0 for a test of colliding tokens,
    /// `same_token`). Returns our token, which names the connection to its endpoint (§4.3),
    /// and the two keys (each side's IDSN derives from its key).
    pub fn install(&mut self, side: Side, s: Secrets, no_encryption: bool, same_token: bool) -> (u32, u64, u64) {
        let (send, recv, local_key, remote_key) = match side {
            Side::Client => (s.c2s, s.s2c, s.key_client, s.key_server),
            Side::Server => (s.s2c, s.c2s, s.key_server, s.key_client),
        };
        #[cfg(feature = "test-hooks")]
        let (send, recv) = match no_encryption {
            true => (send.in_clear(), recv.in_clear()),
            false => (send, recv),
        };
        #[cfg(not(feature = "test-hooks"))]
        let _ = no_encryption;
        self.keys = Some(Keys { send, recv, local_key, remote_key, resumption: s.resumption });
        let token = if same_token { 0 } else { crypto::token(local_key) };
        self.local_token = Some(token);
        self.remote_token = crypto::token(remote_key);
        (token, local_key, remote_key)
    }
}
