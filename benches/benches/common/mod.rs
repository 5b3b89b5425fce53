//! What the handshake and idle benches share: two endpoints' addresses and their making.

use mpcore::{Config, Endpoint, Iface, LocalPath};
use std::net::SocketAddr;

pub fn server_addr() -> SocketAddr {
    "10.0.0.1:5201".parse().expect("address")
}

pub fn client_addr() -> SocketAddr {
    "10.0.1.2:4000".parse().expect("address")
}

/// An endpoint with one local path at `addr`.
pub fn endpoint(config: Config, addr: SocketAddr, server: bool) -> Endpoint {
    let paths = vec![LocalPath { addr, iface: Iface::Wired, backup: false }];
    Endpoint::new(config, paths, server).expect("a valid configuration")
}
