use mpudp::{Interface, MpListener, MpStream, Options, ServerIdentity};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Server: an identity its clients know (`iperf-siri keygen` writes one to a file).
    let id = ServerIdentity::generate()?;
    let key = id.public_key();
    let listener = MpListener::bind("127.0.0.1:0".parse()?, Options::server().identity(id))?;
    let addr = listener.local_addr();
    tokio::spawn(async move {
        while let Ok((s, _peer)) = listener.accept().await {
            let (mut r, mut w) = s.into_split();
            tokio::spawn(async move { tokio::io::copy(&mut r, &mut w).await });
        }
    });
    // Client: two paths (a phone names "wlan0" and "rmnet0"), the server's key.
    let opts = Options::new()
        .interface(Interface::unbound("127.0.0.1:0".parse()?))
        .interface(Interface::unbound("127.0.0.2:0".parse()?).backup(true))
        .server_key(key);
    let mut s = MpStream::connect(addr, opts).await?;
    let mut events = s.events();
    s.write_all(b"hello over two paths").await?;
    s.shutdown().await?;
    let mut reply = String::new();
    s.read_to_string(&mut reply).await?;
    println!("{reply}");
    while let Some(e) = events.next().await {
        println!("{:?} on {:?}", e.event, e.path);
    }
    Ok(())
}
