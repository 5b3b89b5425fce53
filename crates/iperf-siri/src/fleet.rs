//! A fleet of iperf-siri servers behind a stateless balancer (issue 38; PROTOCOL.md §2.1):
//! `iperf-siri fleet-rules` prints the balancer's nftables ruleset, and `-s --fleet ID/IDS
//! --fleet-secret FILE` runs one server of the fleet.

use clap::Args;
use mpudp::fleet::{Backend, Balancer};
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

/// `iperf-siri fleet-rules`.
#[derive(Args, Debug, Clone)]
pub struct FleetRulesArgs {
    /// The service's address and port, which clients connect to: IPv4, or IPv6 in brackets
    /// (`[fd00::1]:5201`; its servers then IPv6 too).
    #[arg(long, value_name = "ADDR:PORT")]
    pub service: SocketAddr,
    /// The fleet's number of server ids (every server's `--fleet ID/IDS` names the same).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(1..))]
    pub ids: u8,
    /// A server: `ID=ADDR`, with `,drained` (no new connection; its own finish) or `,dead`
    /// (its id goes to a live server, which resets its connections). Repeat for each.
    #[arg(long = "server", value_name = "ID=ADDR[,drained|,dead]", value_parser = parse_backend, required = true)]
    pub servers: Vec<Backend>,
    /// The nftables table (replaced whole, atomically, by `nft -f`).
    #[arg(long, default_value = "mpudp_fleet")]
    pub table: String,
    /// TCP carriers where a network drops UDP: server K's own TCP port at the service's
    /// address is PORT + K (each server runs with `--fleet-tcp-base PORT`); without it the
    /// rules carry UDP only.
    #[arg(long, value_name = "PORT")]
    pub tcp_base: Option<u16>,
}

/// `ID=ADDR[,drained|,dead]`.
fn parse_backend(s: &str) -> Result<Backend, String> {
    let bad = || format!("'{s}' is not ID=ADDR[,drained|,dead] (as 0=10.0.0.2,drained)");
    let (id, rest) = s.split_once('=').ok_or_else(bad)?;
    let (addr, state) = rest.split_once(',').map_or((rest, None), |(a, st)| (a, Some(st)));
    let id: u8 = id.trim().parse().map_err(|_| bad())?;
    let addr: IpAddr = addr.trim().parse().map_err(|_| bad())?;
    let (accepting, alive) = match state.map(str::trim) {
        None => (true, true),
        Some("drained") => (false, true),
        Some("dead") => (false, false),
        Some(_) => return Err(bad()),
    };
    Ok(Backend { id, addr, accepting, alive })
}

/// Prints the ruleset for `nft -f`.
pub fn rules(a: &FleetRulesArgs) -> Result<(), String> {
    let b = Balancer {
        service: a.service,
        servers: a.ids,
        backends: a.servers.clone(),
        table: a.table.clone(),
        tcp_base: a.tcp_base,
    };
    print!("{}", b.nft_ruleset()?);
    Ok(())
}

/// `--fleet ID/IDS`: this server's id and the fleet's number of ids.
pub fn parse_member(s: &str) -> Result<(u8, u8), String> {
    let bad = || format!("'{s}' is not ID/IDS (as 1/3: server 1 of a fleet of 3 ids)");
    let (id, ids) = s.split_once('/').ok_or_else(bad)?;
    let (id, ids): (u8, u8) = (id.trim().parse().map_err(|_| bad())?, ids.trim().parse().map_err(|_| bad())?);
    if ids == 0 || id >= ids {
        return Err(bad());
    }
    Ok((id, ids))
}

/// The fleet's secret: 64 hex digits in `file` (every server of the fleet reads the same).
pub fn read_secret(file: &Path) -> Result<[u8; 32], String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("--fleet-secret {}: {e}", file.display()))?;
    let hex = text.trim();
    let bad = || format!("--fleet-secret {}: not 64 hex digits (as `openssl rand -hex 32` writes)", file.display());
    if hex.len() != 64 {
        return Err(bad());
    }
    let mut out = [0u8; 32];
    for (k, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * k..2 * k + 2).ok_or_else(bad)?, 16).map_err(|_| bad())?;
    }
    Ok(out)
}

/// The fleet configuration `--fleet` and `--fleet-secret` give, if any.
pub fn member(fleet: Option<(u8, u8)>, secret: Option<&PathBuf>) -> Result<Option<mpudp::Fleet>, String> {
    match (fleet, secret) {
        (None, None) => Ok(None),
        (Some((server, servers)), Some(f)) => Ok(Some(mpudp::Fleet { server, servers, secret: read_secret(f)? })),
        _ => Err("--fleet ID/IDS and --fleet-secret FILE go together".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_and_members_parse_or_say_what_is_wrong() {
        assert_eq!(
            parse_backend("2=10.0.0.4,drained"),
            Ok(Backend { id: 2, addr: std::net::Ipv4Addr::new(10, 0, 0, 4).into(), accepting: false, alive: true })
        );
        assert!(parse_backend("2=10.0.0.4,asleep").unwrap_err().contains("ID=ADDR"));
        assert!(parse_backend("x=10.0.0.4").is_err());
        assert!(parse_backend("1=nowhere").is_err());
        assert_eq!(parse_backend("1=fd00::2").map(|b| b.addr), Ok("fd00::2".parse().unwrap()), "IPv6 (issue 56)");
        assert_eq!(parse_member("1/3"), Ok((1, 3)));
        assert!(parse_member("3/3").is_err() && parse_member("1").is_err());
    }
}
