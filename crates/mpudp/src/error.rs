//! Typed errors whose messages say what to do.

use mpcore::CloseReason;
use std::fmt;
use std::io;
use std::net::SocketAddr;

/// What can go wrong setting up or using a multipath connection.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// No network interface has this name.
    NoSuchDevice {
        /// The name asked for.
        name: String,
    },
    /// The endpoint has no interface of this name (device or label) to set up, down or
    /// remove.
    NoSuchInterface {
        /// The name asked for.
        name: String,
    },
    /// No interface got an address of the family the peer uses within the connect timeout.
    NoAddress {
        /// The interface (or "any of the endpoint's interfaces").
        name: String,
        /// "IPv4" or "IPv6".
        family: &'static str,
    },
    /// Binding a socket to a device (`SO_BINDTODEVICE`) was refused.
    PermissionDenied {
        /// The device.
        name: String,
    },
    /// Another socket holds this address and port.
    AddrInUse {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The address is not one of this host's (or not on the interface).
    AddrNotAvailable {
        /// The address asked for.
        addr: SocketAddr,
    },
    /// The peer did not answer the handshake, or no route leads to it.
    Unreachable {
        /// The server's address.
        addr: SocketAddr,
        /// How long the handshake was tried.
        waited: std::time::Duration,
    },
    /// The configuration is inconsistent.
    Config(String),
    /// A client was given no server key and did not opt out of authenticating the server.
    NoServerKey,
    /// The answer to the handshake was not signed by the server key given (a man in the
    /// middle, or a server with another key); nothing was sent to it.
    ServerNotAuthenticated {
        /// The address that answered.
        addr: SocketAddr,
    },
    /// The connection closed, for this reason.
    Closed(CloseReason),
    /// The endpoint's driver stopped (the endpoint was closed, or its runtime shut down).
    EndpointClosed,
    /// Any other I/O failure, with what was being done.
    Io {
        /// What was being done.
        context: String,
        /// The operating system's error.
        source: io::Error,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NoSuchDevice { name } => {
                write!(f, "interface {name:?} does not exist (list the interfaces with `ip link`)")
            }
            Error::NoSuchInterface { name } => write!(f, "no interface named {name:?} in this endpoint"),
            Error::NoAddress { name, family } => write!(
                f,
                "{name} got no {family} address in time (give one with `ip addr add`, or name the address explicitly)"
            ),
            Error::PermissionDenied { name } => write!(
                f,
                "binding a socket to interface {name:?} was refused (Linux before 5.7 needs CAP_NET_RAW for it: run as root, grant it with `setcap cap_net_raw+ep`), or use unbound interfaces or sockets the OS bound to a network"
            ),
            Error::AddrInUse { addr } => {
                write!(f, "address {addr} is in use: pick another port, or stop the program that holds it")
            }
            Error::AddrNotAvailable { addr } => {
                write!(f, "address {addr} is not an address of this host (see `ip addr`)")
            }
            Error::Unreachable { addr, waited } => write!(
                f,
                "no answer from {addr} in {:.1} s: check that the server runs, its port, and that a route leads there",
                waited.as_secs_f64()
            ),
            Error::Config(msg) => write!(f, "invalid configuration: {msg}"),
            Error::NoServerKey => f.write_str(
                "the server is not authenticated: give its public key (Options::server_key) or opt out (Options::insecure_unauthenticated_server)",
            ),
            Error::ServerNotAuthenticated { addr } => write!(
                f,
                "{addr} did not prove the server key: a man in the middle, or a server with another key (check the key you were given); nothing was sent"
            ),
            Error::Closed(reason) => write!(f, "connection closed: {reason}"),
            Error::EndpointClosed => write!(f, "the endpoint is closed"),
            Error::Io { context, source } => write!(f, "{context}: {source}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> Self {
        let kind = match &e {
            Error::NoSuchDevice { .. } | Error::NoSuchInterface { .. } | Error::NoAddress { .. } => {
                io::ErrorKind::NotFound
            }
            Error::PermissionDenied { .. } => io::ErrorKind::PermissionDenied,
            Error::AddrInUse { .. } => io::ErrorKind::AddrInUse,
            Error::AddrNotAvailable { .. } => io::ErrorKind::AddrNotAvailable,
            Error::Unreachable { .. } => io::ErrorKind::TimedOut,
            Error::Config(_) | Error::NoServerKey => io::ErrorKind::InvalidInput,
            Error::ServerNotAuthenticated { .. } => io::ErrorKind::PermissionDenied,
            Error::Closed(CloseReason::Aborted | CloseReason::PeerAborted | CloseReason::Reset) => {
                io::ErrorKind::ConnectionReset
            }
            Error::Closed(CloseReason::PeerUnresponsive { .. } | CloseReason::IdleTimeout) => io::ErrorKind::TimedOut,
            Error::Closed(_) | Error::EndpointClosed => io::ErrorKind::ConnectionAborted,
            Error::Io { source, .. } => source.kind(),
        };
        io::Error::new(kind, e)
    }
}

impl Error {
    /// An I/O error on `what` (an interface or address), mapped to the typed variants where the
    /// kernel's answer has a known remedy.
    pub(crate) fn from_io(e: io::Error, context: impl Into<String>, device: Option<&str>, addr: SocketAddr) -> Self {
        match (e.raw_os_error(), e.kind()) {
            (Some(19), _) => match device {
                // ENODEV
                Some(name) => Error::NoSuchDevice { name: name.to_string() },
                None => Error::Io { context: context.into(), source: e },
            },
            (_, io::ErrorKind::PermissionDenied) => match device {
                Some(name) => Error::PermissionDenied { name: name.to_string() },
                None => Error::Io { context: context.into(), source: e },
            },
            (_, io::ErrorKind::AddrInUse) => Error::AddrInUse { addr },
            (_, io::ErrorKind::AddrNotAvailable) => Error::AddrNotAvailable { addr },
            _ => Error::Io { context: context.into(), source: e },
        }
    }
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
