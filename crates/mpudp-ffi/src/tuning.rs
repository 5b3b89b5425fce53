//! The options an app tunes beyond its interfaces and keys: congestion control, the path
//! manager and its oracle, pre-warming, timeouts, windows and buffers, what a server
//! announces, IPv6 (issue 55: every app-facing option of `mpudp::Options` has its call here or
//! in `options.rs`; `tests/options_coverage.rs` holds the two lists together).

use crate::options::{iface_kind, with};
use crate::{arg_addr, arg_str, flag, guard, invalid};
use mpudp::{CongestionControl, PathManager, Prewarm};
use std::ffi::c_char;
use std::time::Duration;

fn ms(v: u32) -> Duration {
    Duration::from_millis(u64::from(v))
}

/// Each subflow's congestion control by name: `lia` (the default, coupled), `olia`, `reno`,
/// `cubic`, or `ledbat` (a background transfer that yields to the user's traffic).
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_congestion(options: u64, name: *const c_char) -> i32 {
    guard(|| {
        // SAFETY: the caller's promise.
        let n = unsafe { arg_str(name, "name") }?;
        let cc = CongestionControl::from_name(n)
            .ok_or_else(|| invalid(format!("congestion control {n:?} (lia, olia, reno, cubic, ledbat)")))?;
        with(options, |o| Ok(o.congestion(cc)))
    })
}

/// How a client opens subflows, by name: `fullmesh`, `backup`, `on-demand`, or `multimob`
/// (the phone preset's: cellular only when WiFi degrades).
///
/// # Safety
/// `name` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_path_manager(options: u64, name: *const c_char) -> i32 {
    guard(|| {
        // SAFETY: the caller's promise.
        let n = unsafe { arg_str(name, "name") }?;
        let pm = PathManager::from_name(n)
            .ok_or_else(|| invalid(format!("path manager {n:?} (fullmesh, backup, on-demand, multimob)")))?;
        with(options, |o| Ok(o.path_manager(pm)))
    })
}

/// The `multimob` path manager's oracle: its period (ms; 1000 by default), the loss rate in
/// per mille above which a path is bad, and the RTO (ms) above which it is slow. 0 keeps a
/// value as it is.
#[no_mangle]
pub extern "C" fn mpu_options_oracle(options: u64, period_ms: u32, loss_permille: u32, rto_ms: u32) -> i32 {
    guard(|| {
        if loss_permille > 1000 {
            return Err(invalid(format!("loss_permille {loss_permille} (at most 1000)")));
        }
        with(options, |o| {
            let mut c = o.config().multipath.oracle;
            if period_ms > 0 {
                c.period = u64::from(period_ms) * 1000;
            }
            if loss_permille > 0 {
                c.loss_threshold = f64::from(loss_permille) / 1000.0;
            }
            if rto_ms > 0 {
                c.rto_threshold = u64::from(rto_ms) * 1000;
            }
            Ok(o.oracle(c))
        })
    })
}

/// Client: wake the cellular radio before a failover needs it, every `every_ms` while a
/// regular path is suspected and up to `hold_ms` after (10000 and 20000 by default); 0 and 0:
/// never (no energy spent on it).
#[no_mangle]
pub extern "C" fn mpu_options_prewarm(options: u64, every_ms: u32, hold_ms: u32) -> i32 {
    let p = Prewarm { every: u64::from(every_ms) * 1000, hold: u64::from(hold_ms) * 1000 };
    guard(|| with(options, |o| Ok(o.prewarm(p))))
}

/// Offer FAST_JOIN (data in a new subflow's first packet) and MP_IDLE (`on`: 0 or 1).
#[no_mangle]
pub extern "C" fn mpu_options_fast_join(options: u64, on: i32) -> i32 {
    guard(|| {
        let on = flag(on, "on")?;
        with(options, |o| Ok(o.fast_join(on)))
    })
}

/// The `priority` scheduler's preference: `n` interface kinds (`MPU_IFACE_*`), most preferred
/// first (default WiFi, wired, cellular).
///
/// # Safety
/// `kinds` must point to `n` readable `uint32_t` (NULL with 0).
#[no_mangle]
pub unsafe extern "C" fn mpu_options_interface_order(options: u64, kinds: *const u32, n: usize) -> i32 {
    guard(|| {
        if n > 16 || (kinds.is_null() && n > 0) {
            return Err(invalid("kinds: at most 16, and not NULL"));
        }
        let raw: &[u32] = if n == 0 {
            &[]
        } else {
            // SAFETY: the caller's promise, checked for NULL above.
            unsafe { std::slice::from_raw_parts(kinds, n) }
        };
        let order = raw.iter().map(|&k| iface_kind(k)).collect::<Result<Vec<_>, _>>()?;
        with(options, |o| Ok(o.interface_order(&order)))
    })
}

/// The connection closes after `ms` without a packet from its peer (0: never).
#[no_mangle]
pub extern "C" fn mpu_options_idle_timeout(options: u64, ms_: u32) -> i32 {
    guard(|| with(options, |o| Ok(o.idle_timeout(ms(ms_)))))
}

/// While data awaits the peer, how long a silent peer is waited for before the connection
/// closes (`MPU_CLOSE_PEER_UNRESPONSIVE`; 10000 by default; 0: the idle timeout decides).
#[no_mangle]
pub extern "C" fn mpu_options_peer_timeout(options: u64, ms_: u32) -> i32 {
    guard(|| with(options, |o| Ok(o.peer_timeout(ms(ms_)))))
}

/// Client: a PING on the primary subflow after `ms` without sending (15000 by default; 0:
/// never), which keeps NAT bindings open.
#[no_mangle]
pub extern "C" fn mpu_options_keep_alive(options: u64, ms_: u32) -> i32 {
    guard(|| with(options, |o| Ok(o.keep_alive(ms(ms_)))))
}

/// The receive window a connection starts with and the most it grows to, in bytes (1 MiB and
/// 8 MiB by default).
#[no_mangle]
pub extern "C" fn mpu_options_recv_window(options: u64, initial: u32, max: u32) -> i32 {
    guard(|| with(options, |o| Ok(o.recv_window(initial as usize, max as usize))))
}

/// Bytes the app may have written and not yet had acknowledged (per connection), and each
/// socket's kernel buffers; 0 keeps a value as it is.
#[no_mangle]
pub extern "C" fn mpu_options_buffers(options: u64, send_buffer: u32, socket_buffer: u32) -> i32 {
    guard(|| {
        with(options, |mut o| {
            if send_buffer > 0 {
                o = o.send_buffer(send_buffer as usize);
            }
            if socket_buffer > 0 {
                o = o.socket_buffer(socket_buffer as usize);
            }
            Ok(o)
        })
    })
}

/// How long the first handshake waits for an answer on the first interface before its INITIAL
/// goes on the others too (250 ms by default; 0: the first interface only).
#[no_mangle]
pub extern "C" fn mpu_options_other_paths_after(options: u64, ms_: u32) -> i32 {
    let d = (ms_ > 0).then(|| ms(ms_));
    guard(|| with(options, |o| Ok(o.other_paths_after(d))))
}

/// How often the interfaces named by device are looked at for a new address or a link gone
/// (0: the library's default).
#[no_mangle]
pub extern "C" fn mpu_options_monitor_interval(options: u64, ms_: u32) -> i32 {
    guard(|| with(options, |o| Ok(if ms_ == 0 { o } else { o.monitor_interval(ms(ms_)) })))
}

/// Interfaces added by device name take their IPv6 address rather than their IPv4 one
/// (`on`: 0 or 1; a cellular network that is IPv6-only).
#[no_mangle]
pub extern "C" fn mpu_options_ipv6(options: u64, on: i32) -> i32 {
    guard(|| {
        let on = flag(on, "on")?;
        with(options, |o| Ok(o.ipv6(on)))
    })
}

/// Run the endpoint in the app's own calls (`on`: 1) instead of on the library's threads (0,
/// the default): the endpoint has no thread; each call on it or its connections runs its
/// sockets and timers on the caller's thread while it waits, so a request and its answer
/// cross no thread (the round trip of the Rust API on a current-thread runtime). Between
/// calls nothing moves: call `mpu_endpoint_drive` from the app's loop, and use blocking calls
/// rather than the readiness descriptor, which only the running endpoint raises.
#[no_mangle]
pub extern "C" fn mpu_options_drive_in_calls(options: u64, on: i32) -> i32 {
    guard(|| {
        let on = flag(on, "on")?;
        with(options, |o| Ok(o.driver_thread(!on)))
    })
}

/// Server: an address of this server announced to every client (`"[2001:db8::1]:443"`), so
/// that their paths of another family can join (an IPv6-only cellular network); up to 64.
///
/// # Safety
/// `addr` must be a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn mpu_options_announce(options: u64, addr: *const c_char) -> i32 {
    guard(|| {
        // SAFETY: the caller's promise.
        let a = unsafe { arg_addr(addr, "addr") }?;
        with(options, |o| Ok(o.announce(a)))
    })
}

/// Client: connect without authenticating the server (anyone on the path can then sit in the
/// middle). Tests and closed networks only; otherwise give `mpu_options_server_key`.
#[no_mangle]
pub extern "C" fn mpu_options_insecure_unauthenticated_server(options: u64) -> i32 {
    guard(|| with(options, |o| Ok(o.insecure_unauthenticated_server())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        mpu_options_free, mpu_options_new, options_of, MPU_ERR_INVALID, MPU_IFACE_CELLULAR, MPU_IFACE_WIFI, MPU_OK,
    };
    use mpudp::Iface;

    fn c(s: &str) -> std::ffi::CString {
        std::ffi::CString::new(s).unwrap_or_default()
    }

    #[test]
    fn each_call_sets_its_option_and_refuses_what_is_not_one() {
        let mut o = 0;
        // SAFETY: a local out.
        assert_eq!(unsafe { mpu_options_new(0, &mut o) }, MPU_OK);
        // SAFETY: NUL-terminated strings, here and below.
        unsafe {
            assert_eq!(mpu_options_congestion(o, c("ledbat").as_ptr()), MPU_OK);
            assert_eq!(mpu_options_congestion(o, c("vegas").as_ptr()), MPU_ERR_INVALID);
            assert_eq!(mpu_options_path_manager(o, c("on-demand").as_ptr()), MPU_OK);
            assert_eq!(mpu_options_path_manager(o, c("nope").as_ptr()), MPU_ERR_INVALID);
            assert_eq!(mpu_options_announce(o, c("[2001:db8::1]:443").as_ptr()), MPU_OK);
            assert_eq!(mpu_options_announce(o, c("nowhere").as_ptr()), MPU_ERR_INVALID);
            let order = [MPU_IFACE_CELLULAR, MPU_IFACE_WIFI];
            assert_eq!(mpu_options_interface_order(o, order.as_ptr(), 2), MPU_OK);
            assert_eq!(mpu_options_interface_order(o, [9].as_ptr(), 1), MPU_ERR_INVALID);
            assert_eq!(mpu_options_interface_order(o, std::ptr::null(), 1), MPU_ERR_INVALID);
        }
        assert_eq!(mpu_options_oracle(o, 500, 100, 0), MPU_OK);
        assert_eq!(mpu_options_oracle(o, 0, 1001, 0), MPU_ERR_INVALID);
        assert_eq!(mpu_options_prewarm(o, 0, 0), MPU_OK);
        assert_eq!(mpu_options_fast_join(o, 1), MPU_OK);
        assert_eq!(mpu_options_fast_join(o, -1), MPU_ERR_INVALID);
        assert_eq!(mpu_options_idle_timeout(o, 60_000), MPU_OK);
        assert_eq!(mpu_options_peer_timeout(o, 0), MPU_OK);
        assert_eq!(mpu_options_keep_alive(o, 5_000), MPU_OK);
        assert_eq!(mpu_options_recv_window(o, 65_536, 1 << 20), MPU_OK);
        assert_eq!(mpu_options_other_paths_after(o, 0), MPU_OK);
        assert_eq!(mpu_options_ipv6(o, 2), MPU_ERR_INVALID);
        assert_eq!(mpu_options_insecure_unauthenticated_server(o), MPU_OK);
        let opts = options_of(o).unwrap_or_default();
        let cfg = opts.config();
        assert_eq!(cfg.transport.congestion, CongestionControl::Ledbat);
        assert_eq!(cfg.multipath.path_manager, PathManager::OnDemand);
        assert_eq!(cfg.server.announce.len(), 1);
        assert_eq!(cfg.multipath.interface_order, vec![Iface::Cellular, Iface::Wifi]);
        assert_eq!(cfg.multipath.oracle.period, 500_000);
        assert!((cfg.multipath.oracle.loss_threshold - 0.1).abs() < 1e-9);
        assert_eq!(cfg.multipath.prewarm, Prewarm::OFF);
        assert!(cfg.multipath.fast_join && cfg.multipath.mp_idle);
        assert_eq!((cfg.transport.idle_timeout, cfg.transport.peer_timeout), (60_000_000, 0));
        assert_eq!(cfg.transport.keep_alive, 5_000_000);
        assert_eq!((cfg.transport.recv_window, cfg.transport.max_recv_window), (65_536, 1 << 20));
        assert_eq!(cfg.multipath.other_paths_after, None);
        assert!(cfg.transport.unauthenticated_server);
        assert_eq!(mpu_options_free(o), MPU_OK);
    }
}
