//! A packet's frames, parsed once (smoltcp's shape: parse into `Repr`s, then act on them).
//! The receiver validates the whole payload before any frame acts (PROTOCOL.md §1), then
//! inspects and dispatches from the list, without parsing again.

use super::frame::{Frame, Frames};
use super::Error;

/// Frames kept parsed. A data packet has one to four (ACK, PING, DSS, padding); a packet of
/// more (a burst of address announcements) keeps the first `KEPT` and parses the rest again
/// when they are iterated: they were validated already.
pub const KEPT: usize = 16;

/// A validated payload and its first [`KEPT`] frames.
#[derive(Clone, Copy, Debug)]
pub struct FrameList<'a> {
    frames: [Frame<'a>; KEPT],
    kept: usize,
    /// The frames after the kept ones (empty when all were kept).
    rest: &'a [u8],
}

impl Default for FrameList<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> FrameList<'a> {
    /// An empty list, for `fill`.
    pub fn new() -> Self {
        Self { frames: [Frame::Ping; KEPT], kept: 0, rest: &[] }
    }

    /// Parses and validates every frame of `payload`; an error if any does not parse.
    pub fn parse(payload: &'a [u8]) -> Result<Self, Error> {
        let mut list = Self::new();
        list.fill(payload)?;
        Ok(list)
    }

    /// `parse` into this list, in place: on the receive path, where the list (a kilobyte)
    /// returned in a `Result` and mapped to the caller's error was copied twice per packet.
    /// After an error the list is not to be used.
    pub fn fill(&mut self, payload: &'a [u8]) -> Result<(), Error> {
        self.kept = 0;
        self.rest = &[];
        let mut frames = Frames::new(payload);
        while self.kept < KEPT {
            let Some(f) = frames.next() else { return Ok(()) };
            self.frames[self.kept] = f?;
            self.kept += 1;
        }
        let at = frames.offset();
        for f in frames {
            f?;
        }
        self.rest = &payload[at..];
        Ok(())
    }

    /// The frames, in their order in the packet.
    pub fn iter(&self) -> impl Iterator<Item = Frame<'a>> + '_ {
        self.frames[..self.kept].iter().copied().chain(Frames::new(self.rest).flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Writer;

    fn payload(n: usize) -> Vec<u8> {
        let mut buf = vec![0u8; 4096];
        let mut w = Writer::new(&mut buf);
        for k in 0..n {
            let f = if k % 2 == 0 { Frame::Ping } else { Frame::MpPrio { backup: k % 3 == 0 } };
            f.emit(&mut w).unwrap();
        }
        let len = w.len();
        buf.truncate(len);
        buf
    }

    #[test]
    fn every_frame_comes_back_once_in_order_beyond_the_kept_ones() {
        for n in [0, 1, KEPT - 1, KEPT, KEPT + 1, 3 * KEPT] {
            let p = payload(n);
            let list = FrameList::parse(&p).unwrap();
            let expect: Vec<_> = Frames::new(&p).map(Result::unwrap).collect();
            assert_eq!(list.iter().collect::<Vec<_>>(), expect, "{n} frames");
            assert_eq!(expect.len(), n);
        }
    }

    #[test]
    fn a_bad_frame_anywhere_fails_the_whole_payload() {
        for n in [3, KEPT + 5] {
            let mut p = payload(n);
            p.push(0x3f); // an undefined frame type
            assert!(FrameList::parse(&p).is_err(), "{n} good frames, then a bad one");
        }
    }
}
