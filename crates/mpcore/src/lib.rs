//! # mpcore: Multipath TCP over UDP, sans I/O
//!
//! The protocol of `docs/PROTOCOL.md`: the logic of Multipath TCP (RFC 8684): data sequence
//! numbers, joins authenticated by HMAC, backup subflows, carried over UDP datagrams with
//! X25519 key agreement and AEAD packet protection.
//!
//! - [`wire`]: parse and emit every packet and frame, without allocating or panicking.
//! - [`crypto`]: key agreement, key schedule, token and IDSN, the HMACs of joins, fast joins
//!   and ADD_ADDR, packet protection.

pub mod crypto;
pub mod wire;
