//! What the rest of the connection may read of a subflow. Only the subflow changes its
//! fields, through methods that say what happened (`control`, `joining`, `loss`).

use super::pmtu::Pmtu;
use super::recovery::Recovery;
use super::{AckState, DataRef, JoinState, Subflow, SubflowState, Validation};
use crate::wire::Cid;
use crate::{Carrier, PathId, Time};

/// The least RTO of a subflow over TCP (µs): TCP repairs a loss within its own RTO (at least
/// 200 ms in Linux) and a round trip; 1 s, RFC 6298's own minimum, covers that on the paths
/// this library targets.
pub const RELIABLE_MIN_RTO: Time = 1_000_000;
use std::net::SocketAddr;

impl Subflow {
    pub fn id(&self) -> u32 {
        self.id
    }

    pub fn state(&self) -> SubflowState {
        self.state
    }

    pub fn local_path(&self) -> PathId {
        self.local_path
    }

    pub fn remote(&self) -> SocketAddr {
        self.remote
    }

    /// What carries its datagrams (§4.11).
    pub fn carrier(&self) -> Carrier {
        self.carrier
    }

    /// Before it opens: its datagrams go over `carrier`. Over TCP (PROTOCOL.md §4.11) the
    /// carrier repairs its own losses: no tail loss probe, and no RTO shorter than
    /// [`RELIABLE_MIN_RTO`], which would fire while TCP repairs a loss and queue a duplicate
    /// behind the repair.
    pub fn set_carrier(&mut self, carrier: Carrier) {
        self.carrier = carrier;
        self.rec.reliable = carrier == Carrier::Tcp;
        if self.rec.reliable {
            self.rec.rtt.raise_min_rto(RELIABLE_MIN_RTO);
        }
    }

    pub fn local_addr_id(&self) -> u8 {
        self.local_addr_id
    }

    pub fn remote_addr_id(&self) -> u8 {
        self.remote_addr_id
    }

    pub fn local_cid(&self) -> Cid {
        self.local_cid
    }

    pub fn remote_cid(&self) -> Option<Cid> {
        self.remote_cid
    }

    pub fn local_opener(&self) -> bool {
        self.local_opener
    }

    pub fn backup(&self) -> bool {
        self.backup
    }

    pub fn join(&self) -> &JoinState {
        &self.join
    }

    pub fn failover(&self) -> bool {
        self.failover
    }

    pub fn rejoin(&self) -> bool {
        self.rejoin
    }

    pub fn rec(&self) -> &Recovery {
        &self.rec
    }

    /// The loss recovery's state, to set up a test.
    #[cfg(test)]
    pub fn rec_mut(&mut self) -> &mut Recovery {
        &mut self.rec
    }

    pub fn acks(&self) -> &AckState {
        &self.acks
    }

    pub fn val(&self) -> &Validation {
        &self.val
    }

    pub fn copy(&self) -> Option<DataRef> {
        self.copy
    }

    /// The pending copy is a repair sent twice, not a retransmission of its own.
    pub fn copy_is_spare(&self) -> bool {
        self.copy.is_some() && self.spare
    }

    /// The data the last repair sent twice here covered (start, end).
    pub fn spared(&self) -> (u64, u64) {
        self.spared
    }

    pub fn last_rx(&self) -> Time {
        self.last_rx
    }

    pub fn last_original_rx(&self) -> Time {
        self.last_original_rx
    }

    /// When new stream data last arrived on it (not a DATA_ACK, unlike `last_original_rx`).
    pub fn last_data_rx(&self) -> Time {
        self.last_data_rx
    }

    pub fn last_data_tx(&self) -> Time {
        self.last_data_tx
    }

    pub fn was_bad(&self) -> bool {
        self.was_bad
    }

    pub fn high_rto(&self) -> bool {
        self.high_rto
    }

    pub fn last_activity(&self) -> Time {
        self.last_activity
    }

    pub fn peer_rto_ms(&self) -> Option<u64> {
        self.peer_rto_ms
    }

    pub fn pmtu(&self) -> &Pmtu {
        &self.pmtu
    }
}
