//! A server spread over cores (`MpListener::bind_cores`): every core's socket is bound to the
//! same address with `SO_REUSEPORT`, and the steering rule of `mpcore::steering` is loaded into
//! the kernel as a classic BPF program on the group, so each datagram reaches the socket (the
//! core) that owns its connection without crossing cores in user space. The program returns
//! the index of a socket in the group, in the order the sockets were bound (core 0 first); an
//! index past the group's end makes the kernel fall back to its hash of the addresses, which is
//! what INITIALs get.
//!
//! The program, over the UDP payload (`ldb` loads the byte at an offset; a load past the end
//! of the datagram ends the program with 0: core 0, which drops it as malformed):
//!
//! ```text
//! 0: ldb [0]                   first byte
//! 1: jset #0x80, 5             long header?
//! 2: ldb [1]                   short: the DCID's first byte, the routing byte
//! 3: div #servers              the core's number (1 server id alone)
//! 4: ret a                     (past the group's end: the kernel's hash)
//! 5: ldb [5]                   long: the DCID's (INITIAL, CONFIRM) or token's (JOIN) first byte
//! 6: div #servers
//! 7: mod #cores
//! 8: ret a
//! ```

use std::io;

#[cfg(target_os = "linux")]
use nix::libc::{sock_filter, sock_fprog};

#[cfg(target_os = "linux")]
const fn op(code: u16, jt: u8, jf: u8, k: u32) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// The program for the cores of `s`.
#[cfg(target_os = "linux")]
pub(crate) fn program(s: mpcore::Steering) -> [sock_filter; 9] {
    // Classic BPF opcodes (linux/filter.h).
    const LD_B_ABS: u16 = 0x10 | 0x20; // BPF_LD (0) | BPF_B | BPF_ABS
    const JSET_K: u16 = 0x05 | 0x40; // BPF_JMP | BPF_JSET | BPF_K
    const DIV_K: u16 = 0x04 | 0x30; // BPF_ALU | BPF_DIV | BPF_K
    const MOD_K: u16 = 0x04 | 0x90; // BPF_ALU | BPF_MOD | BPF_K
    const RET_A: u16 = 0x06 | 0x10; // BPF_RET | BPF_A
    let servers = u32::from(s.servers().max(1));
    [
        op(LD_B_ABS, 0, 0, 0),
        op(JSET_K, 3, 0, 0x80),
        op(LD_B_ABS, 0, 0, 1),
        op(DIV_K, 0, 0, servers),
        op(RET_A, 0, 0, 0),
        op(LD_B_ABS, 0, 0, 5),
        op(DIV_K, 0, 0, servers),
        op(MOD_K, 0, 0, u32::from(s.cores().max(1))),
        op(RET_A, 0, 0, 0),
    ]
}

/// Loads the steering program for the cores of `s` on `socket`'s reuseport group.
#[cfg(target_os = "linux")]
pub(crate) fn attach(socket: &socket2::Socket, s: mpcore::Steering) -> io::Result<()> {
    use nix::sys::socket::{setsockopt, sockopt::AttachReusePortCbpf};
    let mut prog = program(s);
    let fprog = sock_fprog { len: prog.len() as u16, filter: prog.as_mut_ptr() };
    setsockopt(socket, AttachReusePortCbpf, &fprog).map_err(io::Error::from)
}

/// Elsewhere the kernel has no such program: the sockets share the port, hashed.
#[cfg(not(target_os = "linux"))]
pub(crate) fn attach(_socket: &socket2::Socket, _s: mpcore::Steering) -> io::Result<()> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "steering datagrams to cores needs Linux"))
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use mpcore::Steering;

    /// Runs a classic BPF program of the four kinds of instruction ours uses over `d`, as the
    /// kernel does (a load past the end returns 0).
    fn run(prog: &[sock_filter], d: &[u8]) -> u32 {
        let (mut a, mut pc) = (0u32, 0usize);
        loop {
            let i = prog[pc];
            match i.code {
                0x30 => match d.get(i.k as usize) {
                    Some(&b) => a = u32::from(b),
                    None => return 0,
                },
                0x45 => {
                    if a & i.k != 0 {
                        pc += usize::from(i.jt);
                    } else {
                        pc += usize::from(i.jf);
                    }
                }
                0x94 => a %= i.k,
                0x34 => a /= i.k,
                0x16 => return a,
                c => panic!("unexpected opcode {c:#x}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn the_kernel_program_is_the_steering_rule() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for (cores, servers) in [(2u8, 1u8), (3, 1), (4, 1), (7, 1), (64, 1), (2, 3), (3, 5), (64, 4), (1, 7)] {
            let s = Steering::new(0, cores).and_then(|s| s.in_fleet(servers - 1, servers)).unwrap();
            let prog = program(s);
            for len in 0..12 {
                for _ in 0..500 {
                    let d: Vec<u8> = (0..len)
                        .map(|_| {
                            x ^= x << 13;
                            x ^= x >> 7;
                            x ^= x << 17;
                            x as u8
                        })
                        .collect();
                    let ret = run(&prog, &d);
                    // Past the group's end the kernel hashes: `None`. A truncated datagram: 0.
                    let kernel = if ret >= u32::from(cores) { None } else { Some(ret as u8) };
                    let rule = s.core_of(&d);
                    let truncated =
                        d.is_empty() || (d[0] & 0x80 == 0 && d.len() < 2) || (d[0] & 0x80 != 0 && d.len() < 6);
                    if truncated {
                        assert_eq!((kernel, rule), (Some(0), None), "{d:?}");
                    } else {
                        assert_eq!(kernel, rule, "{cores} cores, {servers} server ids, {d:?}");
                    }
                }
            }
        }
    }
}
