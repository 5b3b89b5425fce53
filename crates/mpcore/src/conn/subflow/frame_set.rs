//! A set of control frames: what one owner has pending, or what a sent packet carried (so
//! that the owner of each frame is told of its loss or its acknowledgement).

/// A set of control frame kinds (not their contents, which stay with their owners).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FrameSet(u32);

impl FrameSet {
    pub const EMPTY: Self = Self(0);
    /// HANDSHAKE_DONE (the subflow's lifecycle).
    pub const HS_DONE: Self = Self(1 << 0);
    /// MP_JOIN_SYNACK, MP_JOIN_ACK, MP_JOIN / FAST_JOIN_*, FAST_JOIN_REPLY (the join's).
    pub const SYNACK: Self = Self(1 << 1);
    pub const JOIN_ACK: Self = Self(1 << 2);
    /// MP_PRIO (the subflow's).
    pub const PRIO: Self = Self(1 << 3);
    /// MultiMob's RTO option: a request, and our value (the subflow's).
    pub const RTO_REQ: Self = Self(1 << 4);
    pub const RTO_VAL: Self = Self(1 << 5);
    /// PING (the subflow's probes and keep-alives).
    pub const PING: Self = Self(1 << 6);
    /// SUBFLOW_RESET (the subflow's close).
    pub const RESET: Self = Self(1 << 7);
    /// PATH_CHALLENGE, PATH_RESPONSE (the address validation's).
    pub const CHALLENGE: Self = Self(1 << 8);
    pub const RESPONSE: Self = Self(1 << 9);
    pub const JOIN: Self = Self(1 << 10);
    /// ADD_ADDR, its echo, REMOVE_ADDR (the connection's addresses, carried by one subflow).
    pub const ADD_ADDR: Self = Self(1 << 11);
    pub const ADDR_ECHO: Self = Self(1 << 12);
    pub const REMOVE_ADDR: Self = Self(1 << 13);
    /// MP_FASTCLOSE (the connection's abort, on every subflow).
    pub const FASTCLOSE: Self = Self(1 << 14);
    /// Send the FAST_JOIN_REPLY now (it also rides in every packet until acknowledged).
    pub const FJ_REPLY: Self = Self(1 << 15);
    /// NEW_TICKET (the connection's, carried by one subflow).
    pub const TICKET: Self = Self(1 << 16);
    /// RESET_TOKEN (a fleet server's, for the CID it receives the subflow on; §5.20).
    pub const RESET_TOKEN: Self = Self(1 << 17);
    /// REMOVE_SUBFLOW (the connection's closes of other subflows, carried by one; §5.21).
    pub const REMOVE_SUBFLOW: Self = Self(1 << 18);

    /// Frames that are sent again when the packet carrying them is lost.
    pub const RETRANSMITTABLE: Self = Self(
        Self::HS_DONE.0
            | Self::SYNACK.0
            | Self::JOIN_ACK.0
            | Self::PRIO.0
            | Self::RTO_REQ.0
            | Self::RTO_VAL.0
            | Self::JOIN.0
            | Self::ADD_ADDR.0
            | Self::ADDR_ECHO.0
            | Self::REMOVE_ADDR.0
            | Self::CHALLENGE.0
            | Self::TICKET.0
            | Self::RESET_TOKEN.0
            | Self::REMOVE_SUBFLOW.0,
    );
    /// The join's frames.
    pub const JOINING: Self = Self(Self::JOIN.0 | Self::SYNACK.0 | Self::JOIN_ACK.0 | Self::FJ_REPLY.0);
    /// The address validation's frames.
    pub const VALIDATION: Self = Self(Self::CHALLENGE.0 | Self::RESPONSE.0);
    /// The connection's address frames, which a subflow carries.
    pub const ADDRESSES: Self = Self(Self::ADD_ADDR.0 | Self::ADDR_ECHO.0 | Self::REMOVE_ADDR.0);
    /// Every frame of the connection's that a subflow carries: the addresses, the ticket and
    /// the closes of other subflows.
    pub const CARRIED: Self = Self(Self::ADDRESSES.0 | Self::TICKET.0 | Self::REMOVE_SUBFLOW.0);
    /// The frames that close: a subflow (RESET) or the connection (FASTCLOSE). They elicit
    /// no acknowledgement and go even from a closed subflow.
    pub const CLOSING: Self = Self(Self::RESET.0 | Self::FASTCLOSE.0);

    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Any frame of `other` is in the set.
    pub const fn intersects(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }

    pub const fn union(self, other: Self) -> Self {
        Self(self.0 | other.0)
    }

    pub const fn intersection(self, other: Self) -> Self {
        Self(self.0 & other.0)
    }

    pub const fn without(self, other: Self) -> Self {
        Self(self.0 & !other.0)
    }

    pub fn insert(&mut self, other: Self) {
        self.0 |= other.0;
    }

    pub fn remove(&mut self, other: Self) {
        self.0 &= !other.0;
    }
}

impl std::ops::BitOr for FrameSet {
    type Output = Self;
    fn bitor(self, other: Self) -> Self {
        self.union(other)
    }
}

impl std::ops::BitOrAssign for FrameSet {
    fn bitor_assign(&mut self, other: Self) {
        self.insert(other);
    }
}
