//! The limits of the UDP path itself, with no protocol on it: a sender of UDP GSO batches as
//! fast as the socket takes them, and a receiver that reads them with GRO (the kernel hands
//! over up to 64 KB per read) or without (every datagram read by itself, in `recvmmsg`
//! batches). `benches/net.sh` runs both beside mpudp on the same veth: what mpudp moves is
//! measured against what UDP can move at all, the way mpudp's own driver sends and receives
//! (quinn-udp's `sendmsg` and `recvmmsg`, as `driver::socket`).
//!
//! ```text
//! udp_limit recv 10.92.9.1:5500 [--no-gro]     # prints what it received, once the sender stops
//! udp_limit send 10.92.9.1:5500 --secs 5       # 1472-byte datagrams, 44 per GSO batch
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
        },
        /// Send for `secs` seconds.
        Send {
            addr: SocketAddr,
            #[arg(long, default_value_t = 5.0)]
            secs: f64,
            /// UDP payload of each datagram.
            #[arg(long, default_value_t = 1472)]
            size: usize,
        },
    }

    const BATCH: usize = 8;
    const CHUNK: usize = 65_536;

    pub fn run(cli: Cli) -> Result<(), Box<dyn std::error::Error>> {
        match cli.role {
            Role::Recv { addr, no_gro } => recv(addr, no_gro),
            Role::Send { addr, secs, size } => send(addr, secs, size),
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

    fn recv(addr: SocketAddr, no_gro: bool) -> Result<(), Box<dyn std::error::Error>> {
        let (s, state) = socket(addr)?;
        if no_gro {
            nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::UdpGroSegment, &false)?;
        }
        // Waits in epoll as mpudp's driver does (a blocking recvmmsg would wait for a whole
        // batch, or its timeout, before it returns).
        s.set_nonblocking(true)?;
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let (bytes, datagrams, reads, secs) = rt.block_on(async move {
            let s = tokio::net::UdpSocket::from_std(s)?;
            // Each read has BATCH buffers: of 64 KB for GRO's super-datagrams, else of one datagram.
            let chunk = if no_gro { 2048 } else { CHUNK };
            let mut buf = vec![0u8; BATCH * chunk];
            let mut meta = [RecvMeta::default(); BATCH];
            let (mut bytes, mut datagrams, mut reads) = (0u64, 0u64, 0u64);
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
                        for m in &meta[..n] {
                            bytes += m.len as u64;
                            datagrams += m.len.div_ceil(m.stride.max(1)) as u64;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
            let secs = first.map(|f| last.duration_since(f).as_secs_f64());
            Ok::<_, std::io::Error>((bytes, datagrams, reads, secs))
        })?;
        let Some(secs) = secs.filter(|&t| t > 0.0) else { return Err("nothing received".into()) };
        println!(
            "received {bytes} bytes ({datagrams} datagrams, {reads} reads, GRO {}) in {secs:.2} s: {:.1} Mbit/s",
            if no_gro { "off" } else { "on" },
            bytes as f64 * 8.0 / secs / 1e6
        );
        Ok(())
    }

    fn send(addr: SocketAddr, secs: f64, size: usize) -> Result<(), Box<dyn std::error::Error>> {
        let local: SocketAddr = if addr.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" }.parse()?;
        let (s, state) = socket(local)?;
        let segments = (CHUNK / size).min(state.max_gso_segments()).max(1);
        let batch = vec![0x5au8; segments * size];
        let (start, mut bytes) = (Instant::now(), 0u64);
        let until = Duration::from_secs_f64(secs);
        while start.elapsed() < until {
            let t = Transmit {
                destination: addr,
                ecn: None,
                contents: &batch,
                segment_size: (segments > 1).then_some(size),
                src_ip: None,
            };
            match state.try_send((&s).into(), &t) {
                Ok(()) => bytes += batch.len() as u64,
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
