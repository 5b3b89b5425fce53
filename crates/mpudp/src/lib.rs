//! # mpudp: multipath connections over per-interface UDP sockets, driven by tokio
//!
//! The sans-IO protocol of [`mpcore`] (Multipath TCP's logic over UDP: data sequence numbers,
//! HMAC-authenticated joins, backup subflows, FAST_JOIN, the MultiMob oracle) behind tokio's
//! conventions: [`MpStream::connect`] gives a byte stream implementing `AsyncRead` and
//! `AsyncWrite`, [`MpListener::bind`] and [`MpListener::accept`] serve them.
//!
//! Each local path is one UDP socket, bound to its interface with `SO_BINDTODEVICE`
//! ([`Interface::new`]) or to an address only ([`Interface::unbound`]). One tokio task per
//! endpoint owns the sockets: it reads with recvmmsg (and GRO), sends with UDP GSO batches,
//! runs the protocol's timers, and watches the links, so that an interface going down moves
//! the traffic at once and one coming back is joined again. Its buffers are allocated once;
//! sending and receiving a packet allocates nothing.
//!
//! ```no_run
//! use mpudp::{Iface, Interface, MpListener, MpStream, Options, PathManager};
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! // Server: one address, every client subflow arrives there.
//! let listener = MpListener::bind("0.0.0.0:5201".parse()?, Options::new().scheduler("last-received"))?;
//! tokio::spawn(async move {
//!     while let Ok((s, _peer)) = listener.accept().await {
//!         tokio::spawn(async move {
//!             let (mut r, mut w) = s.into_split();
//!             let _ = tokio::io::copy(&mut r, &mut w).await;
//!         });
//!     }
//! });
//! // Client: WiFi first, cellular opened only when WiFi degrades (MultiMob).
//! let opts = Options::new()
//!     .interface(Interface::new("wlan0").kind(Iface::Wifi))
//!     .interface(Interface::new("rmnet0").kind(Iface::Cellular).backup(true))
//!     .path_manager(PathManager::MultiMob)
//!     .fast_join(true);
//! let mut s = MpStream::connect("192.0.2.1:5201".parse()?, opts).await?;
//! s.write_all(b"ping").await?;
//! # Ok(()) }
//! ```

mod driver;
mod endpoint;
mod error;
mod iface;
#[cfg(target_os = "linux")]
mod netlink;
mod options;
mod stream;

pub use driver::{IoCounters, PathInfo};
pub use endpoint::{MpEndpoint, MpListener};
pub use error::{Error, Result};
pub use iface::{exists as interface_exists, guess_kind, interfaces, InterfaceInfo};
pub use mpcore::{CloseReason, Config, CongestionControl, ConnStats, Drops, Iface, PathManager, SubflowStats};
pub use options::{Interface, Options};
pub use stream::{MpStream, OwnedReadHalf, OwnedWriteHalf};
