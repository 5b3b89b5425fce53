//! How a path's sockets reach their network, so that its TCP carriers (PROTOCOL.md §4.11) leave
//! through the same network as its UDP socket (issue 55).
//!
//! A named interface binds both to its device. A socket the application handed over was bound
//! by the OS, and a TCP socket the library opens for that path must be bound the same way, or
//! it leaves through the default network (cellular, when the app meant WiFi). So the binding is
//! read from the handed-in socket: its device (`SO_BINDTODEVICE`, Linux), its mark (`SO_MARK`,
//! which is how Android's `Network.bindSocket` marks a socket, and how policy routing selects a
//! network on Linux) or its interface index (`IP_BOUND_IF`, Apple). A binding that cannot be
//! copied (setting `SO_MARK` needs `CAP_NET_ADMIN`, which an Android app lacks) refuses the
//! carrier rather than opening it on another network. An app whose OS binds sockets by its own
//! call (Android: `Network.bindSocket`) sets a hook instead (`Options::tcp_socket_hook`): it is
//! given each TCP socket of the path, by label, before it connects.

use std::fmt;
use std::io;
use std::net::SocketAddr;

/// What a path's TCP carriers copy from its UDP socket.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Binding {
    /// The device its sockets are bound to (a named interface, or read from a handed-in
    /// socket on Linux).
    pub(crate) device: Option<String>,
    /// The mark of a handed-in socket (Linux, Android), when it has one.
    pub(crate) mark: Option<u32>,
    /// The interface index of a handed-in socket (`IP_BOUND_IF`, Apple), when it has one.
    pub(crate) index: Option<std::num::NonZeroU32>,
    /// The socket was handed in: the application's hook, if it set one, is called too.
    pub(crate) adopted: bool,
}

impl Binding {
    /// A named interface's: its device.
    pub(crate) fn device(name: Option<&str>) -> Self {
        Self { device: name.map(str::to_string), ..Self::default() }
    }

    /// What a handed-in socket is bound to (nothing it cannot read).
    pub(crate) fn of_adopted(s: &std::net::UdpSocket) -> Self {
        let sock = socket2::SockRef::from(s);
        let mut b = Self { adopted: true, ..Self::default() };
        #[cfg(any(target_os = "linux", target_os = "android"))]
        {
            b.device = sock.device().ok().flatten().and_then(|d| String::from_utf8(d).ok()).filter(|d| !d.is_empty());
            b.mark = sock.mark().ok().filter(|&m| m != 0);
        }
        #[cfg(any(target_os = "macos", target_os = "ios"))]
        {
            let v6 = s.local_addr().is_ok_and(|a| a.is_ipv6());
            b.index = if v6 { sock.device_index_v6() } else { sock.device_index_v4() }.ok().flatten();
        }
        #[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos", target_os = "ios")))]
        let _ = sock;
        b
    }

    /// Binds TCP socket `s` (for `remote`) as the path's UDP socket is bound.
    #[cfg_attr(not(feature = "tcp"), allow(dead_code))]
    pub(crate) fn apply(&self, s: &socket2::SockRef<'_>, remote: SocketAddr) -> io::Result<()> {
        if let Some(d) = &self.device {
            // As the path's UDP socket: SO_BINDTODEVICE, or IP_BOUND_IF on Apple's systems.
            bind_device(s, d, remote)?;
        }
        #[cfg(any(target_os = "linux", target_os = "android"))]
        if let Some(m) = self.mark {
            s.set_mark(m)?;
        }
        #[cfg(any(target_os = "macos", target_os = "ios"))]
        if let Some(i) = self.index {
            match remote {
                SocketAddr::V4(_) => s.bind_device_by_index_v4(Some(i))?,
                SocketAddr::V6(_) => s.bind_device_by_index_v6(Some(i))?,
            }
        }
        Ok(())
    }
}

impl fmt::Display for Binding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.device, self.mark, self.index) {
            (Some(d), _, _) => write!(f, "device {d}"),
            (None, Some(m), _) => write!(f, "mark {m:#x}"),
            (None, None, Some(i)) => write!(f, "interface index {i}"),
            (None, None, None) => f.write_str("no binding"),
        }
    }
}

/// `SO_BINDTODEVICE`: the socket's packets leave through the device whatever the routes say.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn bind_device(s: &socket2::Socket, device: &str, _addr: SocketAddr) -> io::Result<()> {
    s.bind_device(Some(device.as_bytes()))
}

/// `IP_BOUND_IF` / `IPV6_BOUND_IF` by the device's index: Apple's equivalent.
#[cfg(any(target_os = "macos", target_os = "ios"))]
pub(crate) fn bind_device(s: &socket2::Socket, device: &str, addr: SocketAddr) -> io::Result<()> {
    let index = crate::iface::index_of(device).and_then(std::num::NonZeroU32::new);
    let index = index.ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such device"))?;
    match addr {
        SocketAddr::V4(_) => s.bind_device_by_index_v4(Some(index)),
        SocketAddr::V6(_) => s.bind_device_by_index_v6(Some(index)),
    }
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "macos", target_os = "ios")))]
pub(crate) fn bind_device(_s: &socket2::Socket, _device: &str, _addr: SocketAddr) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "binding a socket to a device"))
}
