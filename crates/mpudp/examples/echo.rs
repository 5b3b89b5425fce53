//! An echo server and client over multipath connections.
//!
//! ```text
//! cargo run -p mpudp --example echo -- server 0.0.0.0:5400     # prints its key
//! cargo run -p mpudp --example echo -- client 192.0.2.1:5400 -k KEY -i wlan0 -i rmnet0 "hello"
//! cargo run -p mpudp --example echo            # both in this process, over loopback
//! ```
//!
//! The server proves a key pair made at start (an app's server would keep one in a file:
//! `iperf-siri keygen`); the client is given its public key and refuses any other server.

use mpudp::{Interface, MpListener, MpStream, Options, ServerIdentity};
use std::net::SocketAddr;
use std::process::ExitCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn serve(l: MpListener) -> mpudp::Result<()> {
    eprintln!("echo server on {}", l.local_addr());
    loop {
        let (s, peer) = l.accept().await?;
        eprintln!("connection from {peer}");
        tokio::spawn(async move {
            let (mut r, mut w) = s.into_split();
            if let Err(e) = tokio::io::copy(&mut r, &mut w).await {
                eprintln!("{peer}: {e}");
            }
        });
    }
}

async fn ask(server: SocketAddr, opts: Options, msg: &str) -> Result<String, Box<dyn std::error::Error>> {
    let mut s = MpStream::connect(server, opts).await?;
    s.write_all(msg.as_bytes()).await?;
    s.shutdown().await?;
    let mut back = String::new();
    s.read_to_string(&mut back).await?;
    if let Some(st) = s.stats() {
        for f in &st.subflows {
            eprintln!("subflow {} on path {}: srtt {} us, {:?}", f.id, f.path.0, f.srtt_us, f.state);
        }
    }
    Ok(back)
}

async fn run(args: Vec<String>) -> Result<(), Box<dyn std::error::Error>> {
    match args.first().map(String::as_str) {
        Some("server") => {
            let addr = args.get(1).ok_or("usage: echo server ADDR:PORT")?.parse()?;
            let id = ServerIdentity::generate()?;
            eprintln!("server key: {}", id.public_key());
            serve(MpListener::bind(addr, Options::new().scheduler("last-received").identity(id))?).await?;
        }
        Some("client") => {
            let server: SocketAddr =
                args.get(1).ok_or("usage: echo client ADDR:PORT -k KEY [-i IFACE]... MESSAGE")?.parse()?;
            let mut opts = Options::new();
            let mut rest = args[2..].iter();
            let mut msg = String::from("hello");
            while let Some(a) = rest.next() {
                if a == "-k" {
                    opts = opts.server_key(rest.next().ok_or("-k needs the server's key")?.parse()?);
                } else if a == "-i" {
                    opts = opts.interface(Interface::new(rest.next().ok_or("-i needs an interface name")?.clone()));
                } else {
                    msg = a.clone();
                }
            }
            println!("{}", ask(server, opts, &msg).await?);
        }
        None => {
            let id = ServerIdentity::generate()?;
            let key = id.public_key();
            let l = MpListener::bind("127.0.0.1:0".parse()?, Options::new().scheduler("last-received").identity(id))?;
            let addr = l.local_addr();
            tokio::spawn(serve(l));
            let opts = Options::new()
                .server_key(key)
                .interface(Interface::unbound("127.0.0.1:0".parse()?))
                .interface(Interface::unbound("127.0.0.2:0".parse()?));
            println!("{}", ask(addr, opts, "hello over two loopback paths").await?);
        }
        Some(other) => return Err(format!("unknown command {other:?}: server, client, or nothing").into()),
    }
    Ok(())
}

#[tokio::main]
async fn main() -> ExitCode {
    match run(std::env::args().skip(1).collect()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("echo: {e}");
            ExitCode::FAILURE
        }
    }
}
