//! The limits of the UDP path itself, with no protocol on it: a sender of UDP GSO batches as
//! fast as the socket takes them, and a receiver that reads them with GRO (the kernel hands
//! over up to 64 KB per read) or without (every datagram read by itself, in `recvmmsg`
//! batches). `benches/net.sh` runs both beside mpudp on the same veth: what mpudp moves is
//! measured against what UDP can move at all, the way mpudp's own driver sends and receives
//! (quinn-udp's `sendmsg` and `recvmmsg`, as `driver::socket`).
//!
//! With `--seal` on both ends, every datagram is protected as mpudp protects a full data
//! packet, and nothing else is done: the sender copies 1,440 bytes from a 128 KiB source into
//! it after a 7-byte short header (mpudp's with its default 4-byte CID and a 2-byte packet
//! number), seals them with AES-128-GCM (ring, the header as associated data) and masks the
//! header (QUIC's header protection), 1,463-byte datagrams where 1,472 may go; the receiver
//! unmasks and opens every datagram in place. What it moves is the ceiling of any
//! transport that seals each 1,500-byte datagram by itself, on one core a side (issue 57).
//!
//! ```text
//! udp_limit recv 10.92.9.1:5500 [--no-gro] [--seal]  # prints what it received, once the sender stops
//! udp_limit send 10.92.9.1:5500 --secs 5 [--seal]    # 1472-byte datagrams (1463 sealed), 44 per GSO batch
//! ```

#[cfg(target_os = "linux")]
mod linux {
    use clap::{Parser, Subcommand};
    use quinn_udp::{RecvMeta, Transmit, UdpSocketState};
    use std::io::IoSliceMut;
    use std::net::{SocketAddr, UdpSocket};
    use std::time::{Duration, Instant};

    #[derive(Parser, Debug)]
    #[command(about = "The UDP path's own limits: GSO sends, receives with or without GRO")]
    pub struct Cli {
        #[command(subcommand)]
        role: Role,
    }

    #[derive(Subcommand, Debug)]
    enum Role {
        /// Receive until the sender has been quiet for a second; print the rate.
        Recv {
            addr: SocketAddr,
            /// Read every datagram by itself (UDP_GRO off).
            #[arg(long)]
            no_gro: bool,
            /// Unmask and open every datagram (the sender's --seal).
            #[arg(long)]
            seal: bool,
        },
        /// Send for `secs` seconds.
        Send {
            addr: SocketAddr,
            #[arg(long, default_value_t = 5.0)]
            secs: f64,
            /// UDP payload of each datagram.
            #[arg(long, default_value_t = 1472)]
            size: usize,
            /// Seal every datagram as mpudp seals a full data packet.
            #[arg(long)]
            seal: bool,
        },
    }

    const BATCH: usize = 8;
    const CHUNK: usize = 65_536;

    pub fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
        match cli.role {
            Role::Recv { addr, no_gro, seal } => recv(addr, no_gro, seal.then(Seal::new)),
            Role::Send { addr, secs, size, seal } => send(addr, secs, size, seal.then(Seal::new)),
        }
    }

    /// The short header's length (a flags byte, a 4-byte CID, a 2-byte packet number) and
    /// where its packet number starts.
    const HEADER: usize = 7;
    const PN_OFFSET: usize = 5;
    const TAG: usize = 16;

    /// Both ends' keys (fixed: this measures the work, not the secrecy). ring is called
    /// directly, not through mpudp's `mpcore::crypto::PacketKey`, so that this is the floor of
    /// any transport: through `PacketKey` (its `seal_short`, `unprotect_short` and `open`,
    /// `Short::emit`, `decode_pn`) the same loop moved about 10 % less on one veth (20.3 and
    /// 19.3 Gbit/s against 22.5 and 21.8, alternated), what mpudp's own wrappers cost.
    struct Seal {
        key: ring::aead::LessSafeKey,
        hp: ring::aead::quic::HeaderProtectionKey,
        pn: u64,
    }

    impl Seal {
        fn new() -> Self {
            use ring::aead::{quic, LessSafeKey, UnboundKey, AES_128_GCM};
            let key = LessSafeKey::new(UnboundKey::new(&AES_128_GCM, &[7; 16]).expect("key"));
            let hp = quic::HeaderProtectionKey::new(&quic::AES_128, &[9; 16]).expect("hp key");
            Self { key, hp, pn: 0 }
        }

        fn nonce(pn: u64) -> ring::aead::Nonce {
            let mut n = [0u8; 12];
            n[4..].copy_from_slice(&pn.to_be_bytes());
            ring::aead::Nonce::assume_unique_for_key(n)
        }

        /// The plaintext of a datagram of at most `size` bytes: whole AES blocks, as mpudp's.
        fn plaintext(size: usize) -> usize {
            let room = size.saturating_sub(HEADER + TAG);
            room - room % 16
        }

        /// Writes a sealed datagram of `payload` into `out` (its length: HEADER + payload + TAG).
        fn seal(&mut self, payload: &[u8], out: &mut [u8]) {
            let pn = self.pn;
            self.pn += 1;
            out[0] = 0x41;
            out[1..PN_OFFSET].fill(0xcd);
            out[PN_OFFSET..HEADER].copy_from_slice(&(pn as u16).to_be_bytes());
            let (header, rest) = out.split_at_mut(HEADER);
            rest[..payload.len()].copy_from_slice(payload);
            let tag = self
                .key
                .seal_in_place_separate_tag(
                    Self::nonce(pn),
                    ring::aead::Aad::from(&*header),
                    &mut rest[..payload.len()],
                )
                .expect("seal");
            rest[payload.len()..payload.len() + TAG].copy_from_slice(tag.as_ref());
            let mask = self.hp.new_mask(&out[PN_OFFSET + 4..PN_OFFSET + 20]).expect("mask");
            out[0] ^= mask[0] & 0x1f;
            out[PN_OFFSET] ^= mask[1];
            out[PN_OFFSET + 1] ^= mask[2];
        }

        /// Unmasks and opens a datagram in place; the plaintext's length.
        fn open(&mut self, d: &mut [u8]) -> Option<usize> {
            let mask = self.hp.new_mask(d.get(PN_OFFSET + 4..PN_OFFSET + 20)?).ok()?;
            d[0] ^= mask[0] & 0x1f;
            d[PN_OFFSET] ^= mask[1];
            d[PN_OFFSET + 1] ^= mask[2];
            // The full number, rebuilt from the largest opened so far (RFC 9000 Appendix A.3),
            // which moves only once the datagram is authenticated.
            let truncated = u64::from(u16::from_be_bytes([d[PN_OFFSET], d[PN_OFFSET + 1]]));
            let (win, half) = (1u64 << 16, 1u64 << 15);
            let expected = self.pn;
            let candidate = (expected & !(win - 1)) | truncated;
            let pn = if candidate + half <= expected {
                candidate + win
            } else if candidate > expected + half && candidate >= win {
                candidate - win
            } else {
                candidate
            };
            let (header, rest) = d.split_at_mut(HEADER);
            let plain = self.key.open_in_place(Self::nonce(pn), ring::aead::Aad::from(&*header), rest).ok()?.len();
            self.pn = self.pn.max(pn + 1);
            Some(plain)
        }
    }

    fn socket(bind: SocketAddr) -> Result<(UdpSocket, UdpSocketState), Box<dyn std::error::Error>> {
        let s = socket2::Socket::new(socket2::Domain::for_address(bind), socket2::Type::DGRAM, None)?;
        // Room for bursts at tens of gigabits per second (mpudp's receive buffer is as large).
        let _ = s.set_recv_buffer_size(4 << 20);
        let _ = s.set_send_buffer_size(4 << 20);
        s.bind(&bind.into())?;
        let s: UdpSocket = s.into();
        let state = UdpSocketState::new((&s).into())?;
        // Blocking: each side waits in the kernel for room or data, as a driver does in epoll.
        s.set_nonblocking(false)?;
        Ok((s, state))
    }

    fn recv(addr: SocketAddr, no_gro: bool, mut seal: Option<Seal>) -> Result<(), Box<dyn std::error::Error>> {
        let (s, state) = socket(addr)?;
        if no_gro {
            nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::UdpGroSegment, &false)?;
        }
        // Waits in epoll as mpudp's driver does (a blocking recvmmsg would wait for a whole
        // batch, or its timeout, before it returns).
        s.set_nonblocking(true)?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let opened = if seal.is_some() { ", opened" } else { "" };
        let (bytes, datagrams, reads, secs) = rt.block_on(async move {
            let s = tokio::net::UdpSocket::from_std(s)?;
            // Each read has BATCH buffers: of 64 KB for GRO's super-datagrams, else of one datagram.
            let chunk = if no_gro { 2048 } else { CHUNK };
            let mut buf = vec![0u8; BATCH * chunk];
            let mut meta = [RecvMeta::default(); BATCH];
            let (mut bytes, mut datagrams, mut reads, mut failed) = (0u64, 0u64, 0u64, 0u64);
            let (mut first, mut last) = (None, Instant::now());
            // Quiet for a second once data came: the sender is done.
            let quiet = |first: &Option<Instant>| Duration::from_secs(if first.is_some() { 1 } else { 60 });
            while tokio::time::timeout(quiet(&first), s.readable()).await.is_ok() {
                let mut chunks = buf.chunks_mut(chunk);
                let mut bufs: [IoSliceMut<'_>; BATCH] =
                    std::array::from_fn(|_| IoSliceMut::new(chunks.next().unwrap_or(&mut [])));
                match s.try_io(tokio::io::Interest::READABLE, || state.recv((&s).into(), &mut bufs, &mut meta)) {
                    Ok(n) => {
                        let now = Instant::now();
                        first.get_or_insert(now);
                        last = now;
                        reads += 1;
                        for (m, c) in meta[..n].iter().zip(buf.chunks_mut(chunk)) {
                            datagrams += m.len.div_ceil(m.stride.max(1)) as u64;
                            let Some(seal) = seal.as_mut() else {
                                bytes += m.len as u64;
                                continue;
                            };
                            for d in c[..m.len].chunks_mut(m.stride.max(1)) {
                                match seal.open(d) {
                                    Some(plain) => bytes += plain as u64,
                                    None => failed += 1,
                                }
                            }
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
            let secs = first.map(|f| last.duration_since(f).as_secs_f64());
            if failed > 0 {
                eprintln!("{failed} datagrams failed to open");
            }
            Ok::<_, std::io::Error>((bytes, datagrams, reads, secs))
        })?;
        let Some(secs) = secs.filter(|&t| t > 0.0) else { return Err("nothing received".into()) };
        println!(
            "received {bytes} bytes ({datagrams} datagrams, {reads} reads, GRO {}{}) in {secs:.2} s: {:.1} Mbit/s",
            if no_gro { "off" } else { "on" },
            opened,
            bytes as f64 * 8.0 / secs / 1e6
        );
        Ok(())
    }

    fn send(
        addr: SocketAddr,
        secs: f64,
        size: usize,
        mut seal: Option<Seal>,
    ) -> Result<(), Box<dyn std::error::Error>> {
        let local: SocketAddr = if addr.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse()?;
        let (s, state) = socket(local)?;
        let segments = (CHUNK / size).min(state.max_gso_segments()).max(1);
        // Sealed, a datagram is the header, whole blocks of plaintext and the tag (and holds the
        // header protection's sample).
        if seal.is_some() && size < 64 {
            return Err("--seal needs a --size of at least 64".into());
        }
        let plain = Seal::plaintext(size);
        let size = if seal.is_some() { HEADER + plain + TAG } else { size };
        let mut batch = vec![0x5au8; segments * size];
        // The application's bytes, as iperf3's 128 KiB buffer.
        let source: Vec<u8> = (0..128 << 10).map(|i| i as u8).collect();
        let mut at = 0;
        let (start, mut bytes) = (Instant::now(), 0u64);
        let until = Duration::from_secs_f64(secs);
        let mut sealed = true;
        while start.elapsed() < until {
            if let Some(seal) = seal.as_mut().filter(|_| sealed) {
                // Lost datagrams are not sent again: a batch the socket refused is sealed
                // already and goes as it is.
                for d in batch.chunks_mut(size) {
                    if at + plain > source.len() {
                        at = 0;
                    }
                    seal.seal(&source[at..at + plain], d);
                    at += plain;
                }
            }
            let t = Transmit {
                destination: addr,
                ecn: None,
                contents: &batch,
                segment_size: (segments > 1).then_some(size),
                src_ip: None,
            };
            sealed = false;
            match state.try_send((&s).into(), &t) {
                Ok(()) => {
                    bytes += batch.len() as u64;
                    sealed = true;
                }
                // A full socket (the blocking send returned early) or a veth's queue: try again.
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e.into()),
            }
        }
        let secs = start.elapsed().as_secs_f64();
        println!(
            "sent {bytes} bytes in {secs:.2} s: {:.1} Mbit/s ({segments} datagrams per send)",
            bytes as f64 * 8.0 / secs / 1e6
        );
        Ok(())
    }
}

#[cfg(target_os = "linux")]
fn main() -> std::process::ExitCode {
    use clap::Parser;
    match linux::run(linux::Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("udp_limit: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn main() -> std::process::ExitCode {
    eprintln!("udp_limit: Linux only (UDP GSO and GRO)");
    std::process::ExitCode::FAILURE
}
