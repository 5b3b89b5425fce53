//! Helpers shared by the integration tests.

use scheduler::Flags;

/// Builds [`Flags`] from booleans, in the order of the constants.
pub fn flags(est: bool, pf: bool, backup: bool, rec: bool, sent: bool, hr: bool, bad: bool) -> Flags {
    let mut f = Flags::default();
    for (bit, on) in [
        (Flags::ESTABLISHED, est),
        (Flags::POTENTIALLY_FAILED, pf),
        (Flags::BACKUP, backup),
        (Flags::IN_RECOVERY, rec),
        (Flags::ALREADY_SENT, sent),
        (Flags::HIGH_RTO, hr),
        (Flags::WAS_BAD, bad),
    ] {
        f.set(bit, on);
    }
    f
}
