//! The endpoint's interfaces and the local paths they give: one path per interface, on its
//! current address. The driver reconciles them with the system whenever the kernel reports a
//! link or address change (netlink, [`crate::netlink`]), the application asks
//! ([`Command`]), or, only if the application asked for it, every `monitor_interval`:
//!
//! - an interface whose device gets an address is used (a socket on it, `Endpoint::add_path`,
//!   and connections join from it as their path manager says);
//! - one whose address goes while it has another takes the other (the new path is added
//!   before the old one is removed: make-before-break); one left without any address loses its
//!   path (`Endpoint::remove_path`: the subflows close, the peer gets a REMOVE_ADDR) and waits;
//! - one whose link goes down, or that the application says is down, is reported down
//!   (`Endpoint::set_path_up`), and up again when it is back.

use super::io::Io;
use super::socket::PathSocket;
use super::state::{Command, PathInfo, State};
use crate::error::{Error, Result};
use crate::iface::{self, InterfaceInfo, LinkWatch};
use crate::options::Interface;
use mpcore::{LocalPath, PathId, Time};
use std::net::SocketAddr;

/// One interface of the endpoint.
#[derive(Debug)]
pub(crate) struct Watched {
    pub(crate) iface: Interface,
    /// Its place in the configuration (the first is the primary).
    order: usize,
    /// Its current path and address.
    path: Option<(PathId, SocketAddr)>,
    link: Option<LinkWatch>,
    /// The application said it is down.
    app_down: bool,
    /// Why the last attempt to open its socket failed (reported once per cause).
    last_error: Option<String>,
}

/// The interfaces and what opening their sockets needs.
#[derive(Debug)]
pub(crate) struct Interfaces {
    pub(crate) list: Vec<Watched>,
    v6: bool,
    bufs: (usize, usize),
    max_datagram: usize,
    /// A server spread over cores: the sockets share their port (`reuseport`).
    steering: Option<mpcore::Steering>,
    next_order: usize,
}

impl Interfaces {
    pub(crate) fn new(v6: bool, bufs: (usize, usize), max_datagram: usize, steering: Option<mpcore::Steering>) -> Self {
        Self { list: Vec::new(), v6, bufs, max_datagram, steering, next_order: 0 }
    }

    /// Adds an interface; its path comes with the next `sync`.
    pub(crate) fn add(&mut self, iface: Interface) -> Result<()> {
        let name = iface.name();
        if self.list.iter().any(|w| w.iface.name() == name) {
            return Err(Error::Config(format!("interface {name:?} is already one of the endpoint's")));
        }
        if self.list.len() >= 64 {
            return Err(Error::Config("at most 64 interfaces".into()));
        }
        let link = iface.device.as_deref().and_then(LinkWatch::new);
        self.list.push(Watched { iface, order: self.next_order, path: None, link, app_down: false, last_error: None });
        self.next_order += 1;
        Ok(())
    }

    /// Opens the sockets of every interface that has an address, before the endpoint exists
    /// (its first paths, `PathId`s in this order). A socket that cannot be opened is the
    /// caller's error (a privilege missing, an address in use), not something to wait for.
    pub(crate) fn open_initial(&mut self, io: &mut Io) -> Result<(Vec<LocalPath>, Vec<PathInfo>)> {
        let all = system_interfaces().unwrap_or_default();
        let (mut paths, mut infos) = (Vec::new(), Vec::new());
        for w in &mut self.list {
            w.iface.check_exists()?;
            let Some(addr) = w.iface.resolve(self.v6, &all, None) else {
                tracing::info!(interface = %w.iface.name(), "no address yet: waiting for one");
                continue;
            };
            let sock = PathSocket::open(&w.iface, addr, self.bufs, self.max_datagram, self.steering)?;
            let p = paths.len();
            let (lp, info) = describe(w, &sock);
            w.path = Some((PathId(p as u8), lp.addr));
            io.install(p, sock);
            paths.push(lp);
            infos.push(info);
        }
        Ok((paths, infos))
    }

    /// Applies one application request.
    pub(crate) fn command(&mut self, st: &mut State, io: &mut Io, now: Time, c: Command) {
        match c {
            Command::SetUp { name, up } => {
                if let Some(w) = self.list.iter_mut().find(|w| w.iface.name() == name) {
                    w.app_down = !up;
                }
            }
            Command::Hint { name, hint } => {
                if let Some((path, _)) = self.list.iter().find(|w| w.iface.name() == name).and_then(|w| w.path) {
                    st.ep.path_hint(now, path, hint);
                }
            }
            Command::Refresh => {}
            Command::Add(iface) => {
                if let Err(e) = self.add(iface) {
                    tracing::warn!(error = %e, "interface not added");
                }
            }
            Command::Remove { name } => {
                if let Some(k) = self.list.iter().position(|w| w.iface.name() == name) {
                    let w = self.list.remove(k);
                    if let Some((p, _)) = w.path {
                        remove(st, io, now, p);
                    }
                }
            }
        }
    }

    /// Reconciles every interface's path with the system (see the module's comment).
    pub(crate) fn sync(&mut self, st: &mut State, io: &mut Io, now: Time) {
        let all = if self.list.iter().any(|w| w.iface.follows_addresses()) { system_interfaces() } else { None };
        for k in 0..self.list.len() {
            let w = &mut self.list[k];
            let keep = w.path.map(|(_, a)| a.ip());
            // An interface with a fixed address (or a socket handed over) keeps its path; so
            // does every one when the system's list cannot be read.
            let want = if let (true, Some(all)) = (w.iface.follows_addresses(), all.as_deref()) {
                w.iface.resolve(self.v6, all, keep)
            } else {
                w.path.map(|(_, a)| a).or_else(|| w.iface.resolve(self.v6, all.as_deref().unwrap_or_default(), None))
            };
            // A path comes for an address on a link that is up (and not said down): one on a
            // link still coming up would be joined from and closed again at once.
            if w.link.is_none() {
                // A device added before it existed: watch its link once it does.
                w.link = w.iface.device.as_deref().and_then(LinkWatch::new);
            }
            let usable = !w.app_down && w.link.as_mut().is_none_or(|l| l.is_up());
            let want = want.filter(|_| keep.is_some() || usable);
            if want.map(|a| a.ip()) != keep {
                let old = w.path.take();
                if let Some(addr) = want {
                    self.open(st, io, now, k, addr);
                }
                if let Some((p, a)) = old {
                    tracing::info!(interface = %self.list[k].iface.name(), old = %a, new = ?want, "address changed");
                    remove(st, io, now, p);
                }
            }
            let w = &mut self.list[k];
            let Some((p, _)) = w.path else { continue };
            let up = !w.app_down && w.link.as_mut().is_none_or(|l| l.is_up());
            let info = &mut st.paths[usize::from(p.0)];
            if info.up != up {
                info.up = up;
                info.io.link_changes += 1;
                tracing::info!(interface = %w.iface.name(), up, "link state changed");
                st.ep.set_path_up(now, p, up);
            }
        }
    }

    /// Opens interface `k`'s socket on `addr` and adds its path to the endpoint.
    fn open(&mut self, st: &mut State, io: &mut Io, now: Time, k: usize, addr: SocketAddr) {
        let w = &mut self.list[k];
        let sock = match PathSocket::open(&w.iface, addr, self.bufs, self.max_datagram, self.steering) {
            Ok(s) => s,
            Err(e) => {
                let msg = e.to_string();
                if w.last_error.as_deref() != Some(&msg) {
                    tracing::warn!(interface = %w.iface.name(), %addr, error = %msg, "cannot open a socket; will retry");
                    w.last_error = Some(msg);
                }
                return;
            }
        };
        w.last_error = None;
        let (lp, mut info) = describe(w, &sock);
        let Ok(p) = st.ep.add_path(now, lp) else {
            tracing::warn!(interface = %w.iface.name(), "no room for another local path");
            return;
        };
        // Added up; the link check right after reports it down if it is.
        info.up = true;
        tracing::info!(interface = %w.iface.name(), addr = %lp.addr, path = p.0, "path added");
        w.path = Some((p, lp.addr));
        io.install(usize::from(p.0), sock);
        st.set_path(usize::from(p.0), info);
    }
}

/// Removes path `p` from the endpoint and closes its socket; its counters stay, marked removed.
fn remove(st: &mut State, io: &mut Io, now: Time, p: PathId) {
    st.ep.remove_path(now, p);
    io.close(usize::from(p.0));
    if let Some(info) = st.paths.get_mut(usize::from(p.0)) {
        info.removed = true;
        info.up = false;
    }
}

/// The local path and the driver's view of interface `w` on socket `sock`.
fn describe(w: &mut Watched, sock: &PathSocket) -> (LocalPath, PathInfo) {
    let addr = sock.local_addr();
    let kind = w.iface.role();
    let info = PathInfo {
        device: w.iface.device.clone(),
        addr,
        kind,
        backup: w.iface.backup,
        up: w.link.as_mut().is_none_or(|l| l.is_up()) && !w.app_down,
        removed: false,
        io: Default::default(),
        first_packet: None,
        radio: None,
        order: w.order,
    };
    (LocalPath { addr, iface: kind, backup: w.iface.backup }, info)
}

/// The system's interfaces; `None` if they cannot be listed (then no address changes).
fn system_interfaces() -> Option<Vec<InterfaceInfo>> {
    iface::interfaces().map_err(|e| tracing::warn!(error = %e, "cannot list the interfaces")).ok()
}
