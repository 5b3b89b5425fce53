//! Interface discovery (names, addresses, up/down) and the interface's role from its name.

use crate::error::{Error, Result};
use mpcore::Iface;
use std::io::Read;
use std::net::IpAddr;
use std::path::PathBuf;

/// One network interface of this host, as `getifaddrs` and sysfs report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InterfaceInfo {
    /// Its name (`wlan0`, `rmnet0`, ...).
    pub name: String,
    /// The kernel's interface index.
    pub index: Option<u32>,
    /// Every address, IPv4 first.
    pub addrs: Vec<IpAddr>,
    /// The link is operationally up.
    pub up: bool,
    /// The role guessed from the name (see [`guess_kind`]).
    pub kind: Iface,
}

/// The host's interfaces with at least one address, sorted by name.
pub fn interfaces() -> Result<Vec<InterfaceInfo>> {
    let all = if_addrs::get_if_addrs().map_err(|e| Error::Io { context: "listing interfaces".into(), source: e })?;
    let mut out: Vec<InterfaceInfo> = Vec::new();
    for i in all {
        let ip = i.ip();
        match out.iter_mut().find(|o| o.name == i.name) {
            Some(o) => o.addrs.push(ip),
            None => out.push(InterfaceInfo {
                up: link_up(&i.name).unwrap_or(i.is_oper_up()),
                kind: guess_kind(&i.name),
                index: i.index,
                addrs: vec![ip],
                name: i.name,
            }),
        }
    }
    for o in &mut out {
        o.addrs.sort_by_key(|a| (a.is_ipv6(), *a));
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// The role of an interface from the naming conventions of Linux and Android: `wl*` (and
/// `wifi*`) is WiFi; `rmnet*`, `wwan*`, `ccmni*`, `pdp*` and `ppp*` are cellular modems; `eth*`,
/// `en*` and `em*` are wired. Anything else (veth, loopback, tunnels) is `Other`; configure the
/// role explicitly with [`Interface::kind`](crate::Interface::kind) there.
pub fn guess_kind(name: &str) -> Iface {
    const WIFI: [&str; 2] = ["wl", "wifi"];
    const CELL: [&str; 5] = ["rmnet", "wwan", "ccmni", "pdp", "ppp"];
    const WIRED: [&str; 3] = ["eth", "en", "em"];
    if WIFI.iter().any(|p| name.starts_with(p)) {
        Iface::Wifi
    } else if CELL.iter().any(|p| name.starts_with(p)) {
        Iface::Cellular
    } else if WIRED.iter().any(|p| name.starts_with(p)) {
        Iface::Wired
    } else {
        Iface::Other
    }
}

/// The kernel's index of the named interface (`IP_BOUND_IF` takes it on Apple systems).
#[cfg(any(target_os = "macos", target_os = "ios"))]
pub(crate) fn index_of(name: &str) -> Option<u32> {
    interfaces().ok()?.into_iter().find(|i| i.name == name)?.index
}

/// Whether the named interface exists on this host.
pub fn exists(name: &str) -> bool {
    !name.is_empty() && !name.contains('/') && std::path::Path::new("/sys/class/net").join(name).exists()
}

fn link_up(name: &str) -> Option<bool> {
    LinkWatch::new(name).map(|mut w| w.is_up())
}

/// Reads an interface's operational state from sysfs, without allocating after creation (the
/// driver checks it periodically, on the per-packet path's thread).
#[derive(Debug)]
pub(crate) struct LinkWatch {
    path: PathBuf,
    buf: [u8; 32],
}

impl LinkWatch {
    pub(crate) fn new(name: &str) -> Option<Self> {
        if !exists(name) {
            return None;
        }
        Some(Self { path: PathBuf::from(format!("/sys/class/net/{name}/operstate")), buf: [0; 32] })
    }

    /// `operstate` is `up`, or `unknown` for links without carrier detection (loopback, tun):
    /// anything else (`down`, `lowerlayerdown`, `dormant`, a vanished interface) is down.
    pub(crate) fn is_up(&mut self) -> bool {
        let Ok(mut f) = std::fs::File::open(&self.path) else { return false };
        let Ok(n) = f.read(&mut self.buf) else { return false };
        let s = self.buf[..n].trim_ascii_end();
        s == b"up" || s == b"unknown"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_from_names() {
        assert_eq!(guess_kind("wlan0"), Iface::Wifi);
        assert_eq!(guess_kind("wlp2s0"), Iface::Wifi);
        assert_eq!(guess_kind("rmnet_data0"), Iface::Cellular);
        assert_eq!(guess_kind("wwan0"), Iface::Cellular);
        assert_eq!(guess_kind("eth0"), Iface::Wired);
        assert_eq!(guess_kind("enp3s0"), Iface::Wired);
        assert_eq!(guess_kind("veth0"), Iface::Other);
        assert_eq!(guess_kind("lo"), Iface::Other);
    }

    #[test]
    fn loopback_is_listed_and_up() {
        let all = interfaces().expect("getifaddrs");
        let lo = all.iter().find(|i| i.name == "lo").expect("a loopback interface");
        assert!(lo.up, "{lo:?}");
        assert!(lo.addrs.contains(&IpAddr::from([127, 0, 0, 1])), "{lo:?}");
        assert!(exists("lo"));
        assert!(!exists("no-such-if0"));
        assert!(!exists("../lo"));
        assert!(LinkWatch::new("lo").expect("sysfs").is_up());
    }
}
