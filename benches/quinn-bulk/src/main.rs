//! The QUIC reference for `benches/net.sh`: a bulk upload over one unidirectional stream with
//! quinn's defaults (congestion control, windows, GSO), as an application would use it.
//!
//! The TCP + TLS 1.3 reference too (issue 57): tokio-rustls over one TCP connection, the cipher
//! suite TLS13_AES_128_GCM_SHA256 only (ring's AES-128-GCM, mpudp's AEAD).
//!
//! ```text
//! quinn-bulk server ADDR CERT_FILE      # writes its self-signed certificate, receives one upload
//! quinn-bulk client ADDR CERT_FILE BYTES
//! quinn-bulk tls-server ADDR CERT_FILE  # the same over TCP + TLS 1.3
//! quinn-bulk tls-client ADDR CERT_FILE BYTES
//! ```
//! The server prints `received N bytes in S s: M Mbit/s` (from the first byte to the last).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let r = match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["server", addr, cert] => rt.block_on(server(parse(addr), cert)),
        ["client", addr, cert, bytes] => rt.block_on(client(parse(addr), cert, bytes.parse().unwrap_or_else(|_| usage()))),
        ["tls-server", addr, cert] => rt.block_on(tls_server(parse(addr), cert)),
        ["tls-client", addr, cert, bytes] => {
            rt.block_on(tls_client(parse(addr), cert, bytes.parse().unwrap_or_else(|_| usage())))
        }
        _ => usage(),
    };
    if let Err(e) = r {
        eprintln!("quinn-bulk: {e}");
        std::process::exit(1);
    }
}

fn usage() -> ! {
    eprintln!("usage: quinn-bulk [tls-]server ADDR CERT_FILE | quinn-bulk [tls-]client ADDR CERT_FILE BYTES");
    std::process::exit(2);
}

fn parse(addr: &str) -> SocketAddr {
    addr.parse().unwrap_or_else(|_| usage())
}

type Res = Result<(), Box<dyn std::error::Error>>;

async fn server(addr: SocketAddr, cert_file: &str) -> Res {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let ck = rcgen::generate_simple_self_signed(vec!["bench".into()])?;
    std::fs::write(cert_file, ck.cert.der())?;
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der());
    let config = quinn::ServerConfig::with_single_cert(vec![ck.cert.der().clone()], key.into())?;
    let endpoint = quinn::Endpoint::server(config, addr)?;
    let conn = endpoint.accept().await.ok_or("no connection")?.await?;
    let mut recv = conn.accept_uni().await?;
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    let mut first = None;
    while let Some(n) = recv.read(&mut buf).await? {
        first.get_or_insert_with(Instant::now);
        total += n as u64;
    }
    let secs = first.map_or(0.0, |t| t.elapsed().as_secs_f64()).max(1e-9);
    println!("received {total} bytes in {secs:.3} s: {:.1} Mbit/s", total as f64 * 8.0 / secs / 1e6);
    conn.close(0u32.into(), b"done");
    endpoint.wait_idle().await;
    Ok(())
}

async fn client(addr: SocketAddr, cert_file: &str, bytes: u64) -> Res {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from(std::fs::read(cert_file)?))?;
    let config = quinn::ClientConfig::with_root_certificates(Arc::new(roots))?;
    let mut endpoint = quinn::Endpoint::client("0.0.0.0:0".parse()?)?;
    endpoint.set_default_client_config(config);
    let conn = endpoint.connect(addr, "bench")?.await?;
    let mut send = conn.open_uni().await?;
    let chunk = vec![0x42u8; 1 << 16];
    let mut sent = 0u64;
    while sent < bytes {
        let n = chunk.len().min((bytes - sent) as usize);
        send.write_all(&chunk[..n]).await?;
        sent += n as u64;
    }
    send.finish()?;
    conn.closed().await;
    Ok(())
}

/// ring's provider with one cipher suite: TLS 1.3's AES-128-GCM.
fn aes128_provider() -> Arc<rustls::crypto::CryptoProvider> {
    let mut p = rustls::crypto::ring::default_provider();
    p.cipher_suites = vec![rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256];
    Arc::new(p)
}

async fn tls_server(addr: SocketAddr, cert_file: &str) -> Res {
    use tokio::io::AsyncReadExt;
    let ck = rcgen::generate_simple_self_signed(vec!["bench".into()])?;
    std::fs::write(cert_file, ck.cert.der())?;
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(ck.key_pair.serialize_der());
    let config = rustls::ServerConfig::builder_with_provider(aes128_provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(vec![ck.cert.der().clone()], key.into())?;
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let (tcp, _) = listener.accept().await?;
    tcp.set_nodelay(true)?;
    let mut tls = acceptor.accept(tcp).await?;
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    let mut first = None;
    loop {
        let n = tls.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        first.get_or_insert_with(Instant::now);
        total += n as u64;
    }
    let secs = first.map_or(0.0, |t| t.elapsed().as_secs_f64()).max(1e-9);
    println!("received {total} bytes in {secs:.3} s: {:.1} Mbit/s", total as f64 * 8.0 / secs / 1e6);
    Ok(())
}

async fn tls_client(addr: SocketAddr, cert_file: &str, bytes: u64) -> Res {
    use tokio::io::AsyncWriteExt;
    let mut roots = rustls::RootCertStore::empty();
    roots.add(rustls::pki_types::CertificateDer::from(std::fs::read(cert_file)?))?;
    let config = rustls::ClientConfig::builder_with_provider(aes128_provider())
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let mut tls = connector.connect(rustls::pki_types::ServerName::try_from("bench")?, tcp).await?;
    let chunk = vec![0x42u8; 1 << 16];
    let mut sent = 0u64;
    while sent < bytes {
        let n = chunk.len().min((bytes - sent) as usize);
        tls.write_all(&chunk[..n]).await?;
        sent += n as u64;
    }
    tls.shutdown().await?;
    Ok(())
}
