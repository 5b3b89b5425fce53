//! # mpudp: multipath connections over per-interface UDP sockets, driven by tokio
//!
//! A server and a client in one program, the client on two paths (loopback addresses here; a
//! phone names `wlan0` and `rmnet0`), the server authenticated by its key:
//!
//! ```
//! use mpudp::{Interface, MpListener, MpStream, Options, ServerIdentity};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let id = ServerIdentity::generate()?;
//! let key = id.public_key(); // what an app ships
//! let listener = MpListener::bind("127.0.0.1:0".parse()?, Options::server().identity(id))?;
//! let addr = listener.local_addr();
//! tokio::spawn(async move {
//!     while let Ok((s, _peer)) = listener.accept().await {
//!         let (mut r, mut w) = s.into_split();
//!         tokio::spawn(async move { tokio::io::copy(&mut r, &mut w).await });
//!     }
//! });
//! let opts = Options::new()
//!     .interface(Interface::unbound("127.0.0.1:0".parse()?))
//!     .interface(Interface::unbound("127.0.0.2:0".parse()?).backup(true))
//!     .server_key(key);
//! let mut s = MpStream::connect(addr, opts).await?;
//! s.write_all(b"hello over two paths").await?;
//! s.shutdown().await?;
//! let mut echo = String::new();
//! s.read_to_string(&mut echo).await?;
//! assert_eq!(echo, "hello over two paths");
//! # Ok(())
//! # }
//! ```
//!
//! The sans-IO protocol of [`mpcore`] (Multipath TCP's logic over UDP: data sequence numbers,
//! HMAC-authenticated joins, backup subflows, FAST_JOIN, the MultiMob oracle) behind tokio's
//! conventions: [`MpStream::connect`] gives a byte stream implementing `AsyncRead` and
//! `AsyncWrite`, [`MpListener::bind`] and [`MpListener::accept`] serve them.
//!
//! Each local path is one UDP socket, bound to its interface with `SO_BINDTODEVICE`
//! ([`Interface::new`]) or to an address only ([`Interface::unbound`]). One tokio task per
//! endpoint owns the sockets: it reads with recvmmsg (and GRO), sends with UDP GSO batches,
//! runs the protocol's timers, and follows the interfaces (the kernel's netlink events on
//! Linux), so that an interface going down moves the traffic at once, one coming back is joined
//! again, and an address that appears or changes is used. A socket the OS already bound to a
//! network can be handed over ([`Interface::from_socket`]). Its buffers are allocated once;
//! sending and receiving a packet allocates nothing.
//!
//! Any tokio runtime works. The application's handles and the endpoint's driver share the
//! endpoint behind a lock and wake each other. On a current-thread runtime the driver is a task
//! of it. On a multi-thread one it runs, by default, on a driver thread of its own
//! ([`Options::driver_thread`]): as a task there, an idle worker waiting in the reactor was
//! woken for every datagram, which cost a single upload on one veth 10-15 % of its rate
//! (`benches/net.sh`). A server with many connections spreads them over cores with
//! [`MpListener::bind_cores`].
//!
//! The server proves an Ed25519 identity in every handshake; the client is given its public
//! key (an app ships it) and refuses a server that cannot sign with it, so nobody on a hostile
//! WiFi sits in the middle (PROTOCOL.md §4.6, §12).
//!
//! ```no_run
//! use mpudp::{Iface, Interface, MpListener, MpStream, Options, PublicKey, ServerIdentity};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! // Server for phones: answers on the subflow the client used last, accepts fast joins. Its
//! // key pair is kept in a file (`iperf-siri keygen` writes one); the public key goes to apps.
//! let identity = ServerIdentity::from_pem(&std::fs::read_to_string("server.key")?)?;
//! let key: PublicKey = identity.public_key();
//! let listener = MpListener::bind("0.0.0.0:5201".parse()?, Options::server().identity(identity))?;
//! tokio::spawn(async move {
//!     while let Ok((s, _peer)) = listener.accept().await {
//!         tokio::spawn(async move {
//!             let (mut r, mut w) = s.into_split();
//!             let _ = tokio::io::copy(&mut r, &mut w).await;
//!         });
//!     }
//! });
//! // A phone: WiFi first, cellular a backup opened only when WiFi degrades (MultiMob), silent
//! // while idle but for a keep-alive every 15 s on WiFi. Interfaces and addresses that come
//! // and go later are followed (netlink); `MpEndpoint::set_path_down` takes the OS's word.
//! let opts = Options::phone()
//!     .interface(Interface::new("wlan0").kind(Iface::Wifi))
//!     .interface(Interface::new("rmnet0").kind(Iface::Cellular).backup(true))
//!     .server_key(key);
//! let mut s = MpStream::connect("server.example.com:5201", opts).await?;
//! s.write_all(b"ping").await?;
//! # Ok(()) }
//! ```
//!
//! ## Features
//!
//! - `tcp` (default): TCP carriers where a network drops UDP (PROTOCOL.md §4.11) and
//!   [`Options::tcp_socket_hook`]. Without it the client never tries TCP.
//! - `qlog` (default): [`Options::qlog_dir`], the connections' event logs in files.
//! - `fleet`: [`fleet`], the ruleset of a balancer in front of a fleet of servers.
//!
//! The defaults are a phone app's. `default-features = false` gives the smallest build.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod conn_event;
mod driver;
mod endpoint;
mod error;
mod events;
#[cfg(feature = "fleet")]
#[cfg_attr(docsrs, doc(cfg(feature = "fleet")))]
pub mod fleet;
mod iface;
mod listener;
#[cfg(target_os = "linux")]
mod netlink;
mod options;
mod stream;
mod tickets;

pub use conn_event::ConnEvent;
pub use driver::{IoCounters, PathInfo};
pub use endpoint::MpEndpoint;
pub use error::{Error, Result};
pub use events::Events;
pub use iface::{exists as interface_exists, guess_kind, interfaces, InterfaceInfo};
pub use listener::MpListener;
/// The protocol's configuration in parts (`config::Transport`, `Multipath`, `Resumption`,
/// `Server`, `Logging`), for [`Options::config_mut`] and [`Options::config_all`].
pub use mpcore::config;
pub use mpcore::crypto::Suite;
pub use mpcore::{
    Carrier, CloseReason, Config, CongestionControl, ConnCounters, ConnStats, Drops, Event, Flags, Fleet,
    HandshakeCounters, Iface, KeyError, LinkHint, Mask, PathId, PathManager, Pick, Prewarm, PublicKey,
    ResumptionTicket, Scheduler, SchedulerFactory, Segment, ServerIdentity, Side, SubflowCounters, SubflowInfo,
    SubflowState, SubflowStats,
};
pub use options::{Interface, Options};
pub use oracle::energy::Energy as RadioEnergy;
pub use oracle::{Config as OracleConfig, Verdict as OracleVerdict};
pub use stream::{MpStream, OwnedReadHalf, OwnedWriteHalf, StreamControl};
pub use tickets::TicketStore;
