//! Property tests of the fast-join replay window and HMACs.
//!
//! Each test runs `PROPTEST_CASES` random cases (proptest's default is 256); see README.md.
//! Streams start near 2^64 so that every run crosses the DSN wrap.
#![allow(clippy::unwrap_used)]

use fastjoin::{accept_out, FastJoinOut, Keys, Kind, Refusal, ReplayWindow, Verdict, HMAC_LEN};
use proptest::prelude::*;
use std::collections::{BTreeSet, HashSet};

/// Slots of the window under test: small, so that `Full` happens in the runs.
const N: usize = 8;
const TOKEN: u32 = 0x5eed_0001;
const KEY_CLIENT: u64 = 0x0123_4567_89ab_cdef;
const KEY_SERVER: u64 = 0xfedc_ba98_7654_3210;

/// One step of a run.
#[derive(Debug, Clone)]
enum Op {
    /// Ordinary data arrives in order: EDSN moves on by this many bytes.
    Data(u64),
    /// The receive window changes.
    Window(u64),
    /// A new FAST_JOIN_OUT for the DSN `back` bytes before EDSN (negative: ahead of it).
    FastJoin { back: i64, len: u64 },
    /// The `k`-th fast join sent so far (modulo their number) is sent again, byte for byte.
    Replay(usize),
    /// A fast join whose tag is damaged at byte `at`.
    Forged { back: i64, len: u64, at: usize },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u64..4_000).prop_map(Op::Data),
        1 => (1u64..6_000).prop_map(Op::Window),
        4 => (-200i64..8_000, 0u64..1_500).prop_map(|(back, len)| Op::FastJoin { back, len }),
        3 => any::<usize>().prop_map(Op::Replay),
        1 => (-200i64..8_000, 1u64..1_500, 0..HMAC_LEN).prop_map(|(back, len, at)| Op::Forged { back, len, at }),
    ]
}

/// The specification as sets and arithmetic on unbounded integers (no wrap, no slots).
struct Model {
    low: i128,
    seen: BTreeSet<i128>,
}

impl Model {
    fn accept(&mut self, dsn: i128, len: u64, edsn: i128, wnd: u64) -> Verdict {
        self.low = self.low.max(edsn - i128::from(wnd));
        let low = self.low;
        self.seen.retain(|&d| d >= low);
        let v = if len == 0 {
            Verdict::Refuse(Refusal::NoData)
        } else if dsn < self.low {
            Verdict::Refuse(Refusal::Stale)
        } else if dsn > edsn {
            Verdict::Refuse(Refusal::Ahead)
        } else if self.seen.contains(&dsn) {
            Verdict::Refuse(Refusal::Replay)
        } else if self.seen.len() == N {
            Verdict::Refuse(Refusal::Full)
        } else if dsn + i128::from(len) <= edsn {
            Verdict::AcceptDropData
        } else {
            Verdict::Deliver
        };
        if v.accepted() {
            self.seen.insert(dsn);
        }
        v
    }
}

/// What happened to one fast join in a run.
#[derive(Debug)]
struct Outcome {
    /// Offset of the DSN from the stream's start.
    dsn: i128,
    edsn: i128,
    wnd: u64,
    forged: bool,
    /// DSN not offered before in the run (fresh), and the window was never narrower.
    fresh: bool,
    verdict: Verdict,
    model: Verdict,
}

/// Runs `ops` against the real window (through `accept_out`, HMACs included) and the model.
fn run(start: u64, ops: &[Op], initial_wnd: u64) -> Vec<Outcome> {
    let client = Keys::new(KEY_CLIENT, KEY_SERVER);
    let server = Keys::new(KEY_SERVER, KEY_CLIENT);
    let mut window: ReplayWindow<N> = ReplayWindow::new(start);
    let mut model = Model { low: 0, seen: BTreeSet::new() };
    let (mut edsn, mut wnd) = (0i128, initial_wnd);
    let mut min_wnd = wnd;
    let mut sent: Vec<(i128, u64, [u8; HMAC_LEN])> = Vec::new();
    let mut offered: HashSet<i128> = HashSet::new();
    let data = [0xabu8; 1_500];
    let mut out = Vec::new();
    for op in ops {
        let (dsn, len, hmac, forged) = match *op {
            Op::Data(n) => {
                edsn += i128::from(n);
                continue;
            }
            Op::Window(w) => {
                wnd = w;
                min_wnd = min_wnd.min(w);
                continue;
            }
            Op::FastJoin { back, len } => {
                let dsn = edsn - i128::from(back);
                (dsn, len, client.sign(Kind::Out, abs(start, dsn), TOKEN), false)
            }
            Op::Replay(k) if !sent.is_empty() => {
                let (dsn, len, hmac) = sent[k % sent.len()];
                (dsn, len, hmac, false)
            }
            Op::Replay(_) => continue,
            Op::Forged { back, len, at } => {
                let dsn = edsn - i128::from(back);
                let mut hmac = client.sign(Kind::Out, abs(start, dsn), TOKEN);
                hmac[at] ^= 0x01;
                (dsn, len, hmac, true)
            }
        };
        let f = FastJoinOut { backup: true, addr_id: 1, dsn: abs(start, dsn), hmac, data: &data[..len as usize] };
        let verdict = accept_out(&server, TOKEN, &f, &mut window, abs(start, edsn), wnd);
        let model = if forged { Verdict::Refuse(Refusal::BadHmac) } else { model.accept(dsn, len, edsn, wnd) };
        let fresh = !forged && !offered.contains(&dsn) && min_wnd == wnd;
        if !forged {
            offered.insert(dsn);
            sent.push((dsn, len, hmac));
        }
        out.push(Outcome { dsn, edsn, wnd, forged, fresh, verdict, model });
    }
    out
}

fn abs(start: u64, offset: i128) -> u64 {
    start.wrapping_add(offset as u64)
}

fn start() -> impl Strategy<Value = u64> {
    prop_oneof![Just(0u64), u64::MAX - 20_000..=u64::MAX, any::<u64>()]
}

proptest! {
    /// The window agrees with the set-and-arithmetic model on every step of every run.
    #[test]
    fn agrees_with_the_model(start in start(), wnd in 1u64..6_000, ops in prop::collection::vec(op(), 1..120)) {
        for o in run(start, &ops, wnd) {
            prop_assert_eq!(o.verdict, o.model, "{:?}", o);
        }
    }

    /// No DSN is ever accepted twice, whatever the interleaving of replays, data and window
    /// changes.
    #[test]
    fn a_replay_is_never_accepted(start in start(), wnd in 1u64..6_000, ops in prop::collection::vec(op(), 1..120)) {
        let mut accepted = HashSet::new();
        for o in run(start, &ops, wnd) {
            if o.verdict.accepted() {
                prop_assert!(accepted.insert(o.dsn), "accepted twice: {:?}", o);
            }
        }
    }

    /// Nothing outside [EDSN - rcv_wnd, EDSN] is accepted, and no forged tag is.
    #[test]
    fn out_of_window_and_forged_are_never_accepted(
        start in start(), wnd in 1u64..6_000, ops in prop::collection::vec(op(), 1..120),
    ) {
        for o in run(start, &ops, wnd) {
            if o.verdict.accepted() {
                prop_assert!(o.dsn >= o.edsn - i128::from(o.wnd) && o.dsn <= o.edsn, "{:?}", o);
                prop_assert!(!o.forged, "{:?}", o);
            }
            if o.forged {
                prop_assert_eq!(o.verdict, Verdict::Refuse(Refusal::BadHmac));
            }
        }
    }

    /// A fresh DSN in [EDSN - rcv_wnd, EDSN] with data and a valid tag is accepted whenever a
    /// slot is free (with the window never narrower than now: a window that shrank keeps its
    /// edge, see window.rs).
    #[test]
    fn a_fresh_in_window_fast_join_is_accepted(
        start in start(), wnd in 1u64..6_000, ops in prop::collection::vec(op(), 1..120),
    ) {
        let mut accepted: Vec<i128> = Vec::new();
        for o in run(start, &ops, wnd) {
            let edge = o.edsn - i128::from(o.wnd);
            accepted.retain(|&d| d >= edge);
            // Nothing was ever sent before the stream's first DSN (offset 0).
            let in_window = o.dsn >= edge.max(0) && o.dsn <= o.edsn;
            if o.fresh && in_window && !matches!(o.verdict, Verdict::Refuse(Refusal::NoData)) && accepted.len() < N {
                prop_assert!(o.verdict.accepted(), "{:?}", o);
            }
            if o.verdict.accepted() {
                accepted.push(o.dsn);
            }
            prop_assert!(accepted.len() <= N);
        }
    }

    /// A tag made with any other key, token, kind or value never verifies.
    #[test]
    fn wrong_keys_tokens_kinds_and_values_never_verify(
        a in any::<u64>(), b in any::<u64>(), other in any::<u64>(), value in any::<u64>(),
        token in any::<u32>(), token2 in any::<u32>(), v2 in any::<u64>(),
    ) {
        let server = Keys::new(b, a);
        let tag = Keys::new(a, b).sign(Kind::Out, value, token);
        prop_assert!(server.verify(Kind::Out, value, token, &tag));
        if other != a {
            prop_assert!(!server.verify(Kind::Out, value, token, &Keys::new(other, b).sign(Kind::Out, value, token)));
        }
        if token2 != token {
            prop_assert!(!server.verify(Kind::Out, value, token2, &tag));
        }
        if v2 != value {
            prop_assert!(!server.verify(Kind::Out, v2, token, &tag));
        }
        for kind in [Kind::In, Kind::ReplyAck, Kind::ReplyDsn] {
            prop_assert!(!server.verify(kind, value, token, &tag));
        }
    }
}
