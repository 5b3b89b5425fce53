//! A packet scheduler written by the application, plugged into mpudp: every segment goes on
//! the second path (a user whose first network is metered), over two loopback addresses, in
//! one process. Prints the data each path carried.
//!
//! Run: `cargo run -p mpudp --example custom_scheduler`

use mpudp::{Interface, MpListener, MpStream, Options, Pick, Scheduler, Segment, ServerIdentity, SubflowInfo};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends on the subflow of the second path (the one with the highest path id that is up);
/// waits for it rather than use the first.
#[derive(Debug, Default)]
struct SecondPath;

impl Scheduler for SecondPath {
    fn pick(&mut self, subflows: &[SubflowInfo], seg: &Segment) -> Pick {
        // `SubflowInfo::id` is the subflow number; the initial subflow (0) is on the first path.
        match subflows.iter().position(|s| s.id != 0 && s.available()) {
            Some(i) if subflows[i].can_send(seg.len) => Pick::Send(i),
            _ => Pick::Wait,
        }
    }

    fn name(&self) -> &str {
        "second-path"
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let id = ServerIdentity::generate()?;
    let key = id.public_key();
    let l = MpListener::bind("127.0.0.1:0".parse()?, Options::server().identity(id))?;
    let addr = l.local_addr();
    let server = tokio::spawn(async move {
        let (mut s, _) = l.accept().await?;
        let mut got = Vec::new();
        s.read_to_end(&mut got).await?;
        s.write_all(&(got.len() as u64).to_be_bytes()).await?;
        s.shutdown().await?;
        Ok::<_, std::io::Error>(got.len())
    });
    let opts = Options::new()
        .server_key(key)
        .interface(Interface::unbound("127.0.0.1:0".parse()?))
        .interface(Interface::unbound("127.0.0.2:0".parse()?))
        .custom_scheduler(|| Box::new(SecondPath));
    let mut s = MpStream::connect(addr, opts).await?;
    s.write_all(&vec![7u8; 4 << 20]).await?;
    s.shutdown().await?;
    let mut n = [0u8; 8];
    s.read_exact(&mut n).await?;
    println!("server read {} bytes", u64::from_be_bytes(n));
    let st = s.stats().ok_or("no statistics")?;
    println!("scheduler: {}", st.scheduler);
    for f in &st.subflows {
        println!("subflow {} on path {}: {} data bytes sent", f.id, f.path.0, f.counters.data_bytes_sent);
    }
    server.await??;
    Ok(())
}
