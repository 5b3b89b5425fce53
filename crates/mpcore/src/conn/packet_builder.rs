//! One packet being written: its header, then the frames of each owner that has something
//! to send, each written only where it fits before the AEAD tag; then the padding header
//! protection needs. The owners (the subflow's ACKs, validation and signals, the join, the
//! connection's addresses, the send side's data) write into it; what it carried is told back
//! to them when the packet is committed, and again at its acknowledgement or loss.

use super::qlog::PacketKind;
use super::subflow::{DataRef, FrameSet};
use crate::crypto;
use crate::wire::{Frame, Writer};

/// The most a usual control frame takes (an ADD_ADDR of an IPv6 address with its HMAC is the
/// largest): one is written only where this much room is left. Larger ones (NEW_TICKET,
/// REMOVE_SUBFLOW) check the room they need themselves.
const CONTROL_MAX: usize = 64;

pub(super) struct PacketBuilder<'a> {
    w: Writer<'a>,
    /// The header's length, and its packet number's for a short header (0 for a long one).
    header_len: usize,
    short_pn_len: usize,
    /// Where the frames end: the tag follows.
    limit: usize,
    /// The control frames written, by kind.
    pub sent: FrameSet,
    /// The packet elicits an acknowledgement.
    pub eliciting: bool,
    /// It carries an ACK frame.
    pub ack_sent: bool,
}

impl<'a> PacketBuilder<'a> {
    /// A packet in `buf` (its whole length may be used); `header` writes the header and
    /// returns its length and, for a short header, its packet number's length (0 otherwise).
    pub fn new(buf: &'a mut [u8], header: impl FnOnce(&mut Writer<'_>) -> Option<(usize, usize)>) -> Option<Self> {
        let limit = buf.len().checked_sub(crypto::TAG_LEN)?;
        let mut w = Writer::new(buf);
        let (header_len, short_pn_len) = header(&mut w)?;
        Some(Self { w, header_len, short_pn_len, limit, sent: FrameSet::EMPTY, eliciting: false, ack_sent: false })
    }

    /// Ends the frames' room on a whole AES block: a full packet's plaintext is then a
    /// multiple of 16 bytes (PROTOCOL.md §9.2), so AES-GCM has no partial last block to
    /// encrypt and authenticate apart. With ring a full 1,472-byte datagram took 305 ns to
    /// seal and 325 to open with a 1,449-byte plaintext, 259 and 282 with 1,440
    /// (`wire_crypto`'s `full_packet` bench). The bytes given up (up to 15 a datagram: 9 of
    /// net.sh's 1,472 with the default 4-byte CID, 5 of the default 1,452) cost well under a
    /// percent. A packet that does not fill the room is not padded for it: the saving is for
    /// bulk data, and padding an interactive packet would cost bytes for nanoseconds.
    ///
    /// The blocks are counted from where a 2-byte packet number ends, so that a full packet
    /// keeps one size while the packet number's length moves between 1 and 2 bytes (at about
    /// 64 packets in flight): a GSO batch takes only datagrams of one size, and GRO hands them
    /// over as one. A packet with a 1-byte number (a flight under 64 packets, where the CPU
    /// matters little) then seals one byte of a partial block.
    pub fn whole_blocks(&mut self) {
        let short_pad = if self.short_pn_len > 0 { 2usize.saturating_sub(self.short_pn_len) } else { 0 };
        let from = self.header_len + short_pad;
        // Never beyond the room there was (a datagram too small for the count is left as is).
        let plain = self.limit.saturating_sub(from);
        self.limit -= plain % crypto::BLOCK_LEN;
    }

    /// Room for a control frame of any kind.
    pub fn has_room(&self) -> bool {
        self.w.len() + CONTROL_MAX < self.limit
    }

    /// The bytes left before the tag.
    pub fn room(&self) -> usize {
        self.limit.saturating_sub(self.w.len())
    }

    /// Writes control frame `f` (of kind `kind`) if there is room; true if written.
    pub fn control(&mut self, kind: FrameSet, f: Frame<'_>) -> bool {
        if self.has_room() && f.emit(&mut self.w).is_ok() {
            self.sent |= kind;
            return true;
        }
        false
    }

    /// The writer, for frames whose size the caller measured against [`PacketBuilder::room`].
    pub fn writer(&mut self) -> &mut Writer<'a> {
        &mut self.w
    }

    /// Fills the room left before the tag with PADDING (an MTU probe is its size).
    pub fn pad_to_end(&mut self) -> Option<()> {
        let n = self.room();
        self.w.zeros(n).ok()
    }

    /// Ends the frames: pads a short header's packet so that header protection has its 4
    /// bytes after the packet number (§9.3). Returns the header's length, the plaintext's
    /// length and whether the header is short.
    pub fn finish(mut self) -> Option<(usize, usize, bool)> {
        while self.short_pn_len > 0 && self.w.len() - self.header_len + self.short_pn_len < 4 {
            self.w.u8(0).ok()?;
        }
        Some((self.header_len, self.w.len() - self.header_len, self.short_pn_len > 0))
    }
}

/// What `Connection::write_data` put in a packet.
pub(super) struct DataWritten {
    /// The stream range it carries (a FAST_JOIN_OUT's, or the DSS's).
    pub sent: Option<DataRef>,
    /// That range as chosen: (range, retransmission, new data).
    pub data: Option<(DataRef, bool, bool)>,
    /// A FAST_JOIN_OUT carried data.
    pub fast_join_data: bool,
    /// The DATA_ACK (and the window) that went, if one did.
    pub data_ack: Option<u64>,
    /// The mapping carried MP_IDLE (for the log).
    pub idle: bool,
}

/// A sealed packet, for its owners (see `Connection::on_built`).
pub(super) struct PacketBuilt {
    pub pn: u64,
    pub sent: FrameSet,
    pub eliciting: bool,
    pub ack_sent: bool,
    pub injected: bool,
    pub kind: PacketKind,
    pub data: DataWritten,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The room for frames after `whole_blocks`, in a datagram of `len` bytes whose header
    /// takes `header` bytes, `pn_len` of them a short header's packet number (0: a long one).
    fn room(len: usize, header: usize, pn_len: usize) -> usize {
        let mut buf = vec![0u8; len];
        let mut b = PacketBuilder::new(&mut buf, |w| {
            w.zeros(header).ok()?;
            Some((header, pn_len))
        })
        .expect("room for the header");
        b.whole_blocks();
        b.room()
    }

    #[test]
    fn a_full_packet_ends_on_a_whole_block_and_keeps_its_size_across_packet_number_lengths() {
        // 1 + 4 (the CID) + 2: 1,472 - 7 - 16 = 1,449 bytes of room, 1,440 in whole blocks.
        assert_eq!(room(1472, 7, 2), 1440);
        // A 1-byte packet number: the same 1,463-byte datagram, one byte past the blocks.
        assert_eq!(6 + room(1472, 6, 1) + crypto::TAG_LEN, 1463);
        assert_eq!(room(1452, 11, 2) % 16, 0);
        assert_eq!(room(1472, 8, 3) % 16, 0);
        // A long header: whole blocks from its end.
        assert_eq!(room(1200, 40, 0), 1136);
        // Too small to count from the 2-byte number's end: left as it was.
        assert_eq!(room(24, 7, 1), 1);
    }
}
