//! Where the protocol's randomness comes from: the system's secure generator, or, for
//! simulations and tests, a generator seeded by `Config::rng_seed` (the `test-hooks` feature),
//! so that a run (key shares, connection IDs, nonces, challenges, and so every byte on the
//! wire) is a function of its seed, as quinn's `rng_seed` makes it.
//!
//! The seeded generator is HMAC-SHA256 in counter mode over the seed: deterministic, and as
//! unpredictable as the seed, which is to say not at all. It must never be used in
//! production.

use crate::crypto::{CryptoError, KeyShare};
use crate::wire::Cid;
use ring::{hmac, rand};
use std::fmt;

/// An endpoint's or a connection's source of randomness.
pub enum Rng {
    /// The operating system's generator.
    System(rand::SystemRandom),
    /// A deterministic stream (the simulator's): HMAC-SHA256 of a counter under a key.
    Seeded {
        /// The key, from the seed.
        key: hmac::Key,
        /// The next block's number.
        counter: u64,
    },
}

impl fmt::Debug for Rng {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rng::System(_) => f.write_str("Rng::System"),
            Rng::Seeded { counter, .. } => write!(f, "Rng::Seeded({counter})"),
        }
    }
}

impl Rng {
    /// The system generator, or a seeded one.
    pub fn new(seed: Option<u64>) -> Self {
        match seed {
            None => Rng::System(rand::SystemRandom::new()),
            Some(s) => Self::seeded(&s.to_be_bytes()),
        }
    }

    fn seeded(seed: &[u8]) -> Self {
        Rng::Seeded { key: hmac::Key::new(hmac::HMAC_SHA256, seed), counter: 0 }
    }

    /// Fills `out`. Fails only if the system has no randomness.
    pub fn fill(&mut self, out: &mut [u8]) -> Result<(), CryptoError> {
        match self {
            Rng::System(r) => rand::SecureRandom::fill(r, out).map_err(|_| CryptoError::Rng),
            Rng::Seeded { key, counter } => {
                for chunk in out.chunks_mut(32) {
                    let block = hmac::sign(key, &counter.to_be_bytes());
                    *counter += 1;
                    chunk.copy_from_slice(&block.as_ref()[..chunk.len()]);
                }
                Ok(())
            }
        }
    }

    /// A generator for one connection: the system's again, or one seeded from this one (so
    /// each connection's draws do not depend on the others' order).
    pub fn fork(&mut self) -> Self {
        match self {
            Rng::System(_) => Rng::System(rand::SystemRandom::new()),
            Rng::Seeded { .. } => {
                let mut seed = [0u8; 32];
                let _ = self.fill(&mut seed);
                Self::seeded(&seed)
            }
        }
    }

    /// 32 random bytes (a key).
    pub fn key(&mut self) -> Result<[u8; 32], CryptoError> {
        let mut k = [0u8; 32];
        self.fill(&mut k)?;
        Ok(k)
    }

    /// A random `u32` (a join nonce). Without system randomness it is 0, as ring would fail
    /// every key share then anyway.
    pub fn u32(&mut self) -> u32 {
        let mut b = [0u8; 4];
        let _ = self.fill(&mut b);
        u32::from_be_bytes(b)
    }

    /// A random connection ID.
    pub fn cid(&mut self) -> Cid {
        let mut c = [0u8; 8];
        let _ = self.fill(&mut c);
        Cid(c)
    }

    /// A fresh X25519 key share (§4.1).
    pub fn key_share(&mut self) -> Result<KeyShare, CryptoError> {
        match self {
            Rng::System(_) => KeyShare::generate(),
            Rng::Seeded { .. } => KeyShare::from_seed(&self.key()?),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_fixes_every_draw_and_forks_are_independent() {
        let (mut a, mut b) = (Rng::new(Some(7)), Rng::new(Some(7)));
        assert_eq!(a.cid(), b.cid());
        assert_eq!(a.key().unwrap(), b.key().unwrap());
        let mut odd = [0u8; 45];
        let mut odd2 = [0u8; 45];
        a.fill(&mut odd).unwrap();
        b.fill(&mut odd2).unwrap();
        assert_eq!(odd, odd2, "lengths that are not a block's multiple too");
        let (mut fa, mut fb) = (a.fork(), b.fork());
        assert_eq!(fa.u32(), fb.u32());
        assert_ne!(a.cid(), fa.cid(), "a fork draws its own numbers");
        assert_ne!(Rng::new(Some(8)).cid(), Rng::new(Some(7)).cid());
        assert_ne!(Rng::new(None).key().unwrap(), Rng::new(None).key().unwrap());
    }

    #[test]
    fn seeded_key_shares_repeat_and_agree() {
        let (mut a, mut b) = (Rng::new(Some(1)), Rng::new(Some(1)));
        let (ka, kb) = (a.key_share().unwrap(), b.key_share().unwrap());
        assert_eq!(ka.public(), kb.public(), "the same seed gives the same share");
        let other = Rng::new(Some(2)).key_share().unwrap();
        let peer = *other.public();
        let shared = ka.agree(other.public()).unwrap();
        let mut c = Rng::new(Some(2));
        assert_eq!(c.key_share().unwrap().agree(kb.public()).unwrap(), shared, "a real X25519 exchange");
        assert_ne!(peer, *kb.public());
    }
}
