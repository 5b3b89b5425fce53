//! The test protocol on the one multipath stream a test uses.
//!
//! ```text
//! client → server  HELLO   "IPSIRI" | protocol u16 | length u32 | Params (JSON)
//! server → client  ANSWER  "IPSIRI" | protocol u16 | status u8 | length u32 | text
//!                  status 0: accepted (text: the server's version);
//!                  1: refused (text: why, for instance a protocol mismatch); 2: busy.
//! then frames, either way: kind u8 | length u32 | body
//!   BURST  (client)  request u32 | burst u8 | last u8 | filler      one burst of a request
//!   IR     (server)  request u32 | burst u8 | filler                the intermediate response
//!   FINAL  (server)  request u32 | burst u8 | filler                the final response
//!   DATA   (sender)  filler                                         bulk mode
//!   END    (each)    empty        this side sends no more test data
//!   RESULTS(each)    JSON          the client's, answered by the server's
//!   STOP   (server)  text          the server ends the test early, and says why (its
//!                                  client silent too long, or its slot given to another)
//! ```
//!
//! The client sends END when its workload is done (at once when the server sends, `-R`), the
//! server answers END once it has read the client's and finished its own sending, the client
//! sends its RESULTS and the server answers with its own; then both close. Every length is
//! checked against a bound before anything is allocated: a peer cannot make the other side
//! allocate more than [`MAX_FRAME`].

/// This program and its version, as both sides report it.
pub const VERSION: &str = concat!("iperf-siri ", env!("CARGO_PKG_VERSION"));

use serde::{Deserialize, Serialize};
use std::io;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// The version of this protocol; both ends must speak the same.
pub const PROTOCOL: u16 = 1;
pub const MAGIC: &[u8; 6] = b"IPSIRI";
/// The largest frame body or JSON document accepted.
pub const MAX_FRAME: u32 = 16 << 20;
/// The largest test request (HELLO) accepted: its parameters are a few hundred bytes. At
/// [`MAX_FRAME`], a 16 MiB HELLO took the server from 7 to 44 MB (issue 52).
pub const MAX_HELLO: u32 = 64 << 10;
/// The largest STOP text read.
pub const MAX_STOP: u32 = 4096;

pub const BURST: u8 = 1;
pub const IR: u8 = 2;
pub const FINAL: u8 = 3;
pub const DATA: u8 = 4;
pub const END: u8 = 5;
pub const RESULTS: u8 = 6;
pub const STOP: u8 = 7;

pub const ACCEPTED: u8 = 0;
pub const REFUSED: u8 = 1;
pub const BUSY: u8 = 2;

/// The body prefix of a burst: request, burst index, last flag.
pub const BURST_PREFIX: usize = 6;
/// The body prefix of a response: request, burst index.
pub const RESPONSE_PREFIX: usize = 5;

#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Siri,
    Bulk,
}

/// What the client asks for; the server follows it.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct Params {
    pub protocol: u16,
    pub mode: Mode,
    pub reverse: bool,
    /// Siri mode: requests to run (`None`: until `duration_s`).
    pub requests: Option<u32>,
    pub duration_s: Option<f64>,
    /// Bulk mode: bytes to send (instead of a duration).
    pub bytes: Option<u64>,
    pub bursts: u32,
    pub writes: u32,
    pub write_min: u32,
    pub write_max: u32,
    pub burst_bytes: Option<u64>,
    pub burst_gap_ms: f64,
    pub wait_ms: f64,
    pub response_bytes: u32,
    pub ir_bytes: u32,
    pub ir: bool,
    pub seed: u64,
    pub test_id: Option<String>,
    /// The client's transport settings, for the server's report.
    pub scheduler: String,
    pub path_manager: String,
    pub fast_join: bool,
    pub subflows: Vec<String>,
}

/// Most requests a test may ask for.
pub const MAX_REQUESTS: u32 = 1_000_000;
/// Longest burst gap or wait.
pub const MAX_WAIT_MS: f64 = 3_600_000.0;
/// Longest test.
pub const MAX_DURATION_S: f64 = 86_400.0;

impl Params {
    /// Checks the parameters against the protocol's limits (both sides run it: the client
    /// before it connects, the server before it accepts), naming the flag at fault.
    pub fn validate(&self) -> Result<(), String> {
        let frame = MAX_FRAME as u64;
        if self.requests.is_some_and(|n| n == 0 || n > MAX_REQUESTS) {
            return Err(format!("--requests must be 1 to {MAX_REQUESTS}"));
        }
        if self.bursts == 0 || self.bursts > 255 {
            return Err(format!("--bursts must be 1 to 255 (got {})", self.bursts));
        }
        if self.write_min > self.write_max || self.write_max == 0 {
            return Err("--write-size must be MIN..MAX with 0 < MAX and MIN <= MAX".into());
        }
        let burst = self.burst_bytes.unwrap_or(u64::from(self.writes) * u64::from(self.write_max));
        if burst + BURST_PREFIX as u64 > frame {
            return Err(format!(
                "a burst of up to {burst} bytes exceeds the protocol's frame limit of {} bytes (--burst-bytes, --writes x --write-size)",
                frame - BURST_PREFIX as u64
            ));
        }
        for (flag, bytes) in [("--response-bytes", self.response_bytes), ("--ir-bytes", self.ir_bytes)] {
            if u64::from(bytes) + RESPONSE_PREFIX as u64 > frame {
                return Err(format!("{flag} must be at most {} bytes", frame - RESPONSE_PREFIX as u64));
            }
        }
        for (flag, ms) in [("--burst-gap", self.burst_gap_ms), ("--wait", self.wait_ms)] {
            if !(0.0..=MAX_WAIT_MS).contains(&ms) {
                return Err(format!("{flag} must be at most 1 h"));
            }
        }
        if self.duration_s.is_some_and(|d| !(0.0..=MAX_DURATION_S).contains(&d)) {
            return Err("-t must be at most a day (86400 s)".into());
        }
        Ok(())
    }
}

impl Default for Params {
    /// The seeds' Siri workload (BRIEF.md): 10 requests of 9 bursts of 9 writes of 50..500
    /// bytes, 300 ms apart, a 5 s wait, 750-byte final and 100-byte intermediate responses;
    /// lowest-RTT and fullmesh.
    fn default() -> Self {
        Self {
            protocol: PROTOCOL,
            mode: Mode::Siri,
            reverse: false,
            requests: Some(10),
            duration_s: None,
            bytes: None,
            bursts: 9,
            writes: 9,
            write_min: 50,
            write_max: 500,
            burst_bytes: None,
            burst_gap_ms: 300.0,
            wait_ms: 5000.0,
            response_bytes: 750,
            ir_bytes: 100,
            ir: true,
            seed: 1,
            test_id: None,
            scheduler: "lowest-rtt".into(),
            path_manager: "fullmesh".into(),
            fast_join: false,
            subflows: Vec::new(),
        }
    }
}

/// Why the exchange failed.
#[derive(Debug)]
pub enum ProtoError {
    Io(io::Error),
    /// The peer is not speaking this protocol at all.
    NotIperfSiri,
    /// The peer speaks another version.
    Version {
        ours: u16,
        theirs: u16,
    },
    Refused(String),
    Busy,
    /// A length or document the protocol does not allow.
    Malformed(String),
}

impl std::fmt::Display for ProtoError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Io(e) => write!(f, "{e}"),
            Self::NotIperfSiri => write!(f, "the peer is not an iperf-siri endpoint"),
            Self::Version { ours, theirs } => write!(
                f,
                "version mismatch: the peer speaks iperf-siri protocol {theirs}, this side speaks {ours}; \
                 run the same iperf-siri release on both hosts"
            ),
            Self::Refused(why) => write!(f, "the server refused the test: {why}"),
            Self::Busy => {
                write!(f, "the server is busy: every test slot it has is taken (--max-tests); try again later")
            }
            Self::Malformed(what) => write!(f, "protocol error: {what}"),
        }
    }
}

impl From<io::Error> for ProtoError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

pub async fn write_hello<W: AsyncWrite + Unpin>(w: &mut W, protocol: u16, params: &Params) -> io::Result<()> {
    w.write_all(&hello(protocol, params)?).await?;
    w.flush().await
}

/// The test request's bytes (what `write_hello` writes).
pub fn hello(protocol: u16, params: &Params) -> io::Result<Vec<u8>> {
    let json = serde_json::to_vec(params).map_err(io::Error::other)?;
    let mut out = Vec::with_capacity(12 + json.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&protocol.to_be_bytes());
    out.extend_from_slice(&(json.len() as u32).to_be_bytes());
    out.extend_from_slice(&json);
    Ok(out)
}

/// Reads a HELLO. A protocol mismatch is reported before the parameters are read (another
/// version may not even send JSON).
pub async fn read_hello<R: AsyncRead + Unpin>(r: &mut R) -> Result<Params, ProtoError> {
    let theirs = read_magic(r).await?;
    if theirs != PROTOCOL {
        return Err(ProtoError::Version { ours: PROTOCOL, theirs });
    }
    let len = r.read_u32().await?;
    if len > MAX_HELLO {
        return Err(ProtoError::Malformed(format!("a {len}-byte test request (at most {MAX_HELLO})")));
    }
    let json = read_body(r, len).await?;
    serde_json::from_slice(&json).map_err(|e| ProtoError::Malformed(format!("parameters: {e}")))
}

pub async fn write_answer<W: AsyncWrite + Unpin>(w: &mut W, status: u8, text: &str) -> io::Result<()> {
    let mut out = Vec::with_capacity(13 + text.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&PROTOCOL.to_be_bytes());
    out.push(status);
    out.extend_from_slice(&(text.len() as u32).to_be_bytes());
    out.extend_from_slice(text.as_bytes());
    w.write_all(&out).await?;
    w.flush().await
}

/// Reads the server's ANSWER to `ours`; `Ok` carries the server's version text.
pub async fn read_answer<R: AsyncRead + Unpin>(r: &mut R, ours: u16) -> Result<String, ProtoError> {
    let theirs = read_magic(r).await?;
    let status = r.read_u8().await?;
    let len = r.read_u32().await?;
    if len > 4096 {
        return Err(ProtoError::Malformed(format!("a {len}-byte answer (at most 4096)")));
    }
    let text = String::from_utf8_lossy(&read_body(r, len).await?).into_owned();
    match status {
        ACCEPTED if theirs == ours => Ok(text),
        BUSY => Err(ProtoError::Busy),
        _ if theirs != ours => Err(ProtoError::Version { ours, theirs }),
        _ => Err(ProtoError::Refused(text)),
    }
}

async fn read_magic<R: AsyncRead + Unpin>(r: &mut R) -> Result<u16, ProtoError> {
    let mut m = [0u8; 6];
    r.read_exact(&mut m).await?;
    if &m != MAGIC {
        return Err(ProtoError::NotIperfSiri);
    }
    Ok(r.read_u16().await?)
}

async fn read_body<R: AsyncRead + Unpin>(r: &mut R, len: u32) -> Result<Vec<u8>, ProtoError> {
    if len > MAX_FRAME {
        return Err(ProtoError::Malformed(format!("a {len}-byte document (at most {MAX_FRAME})")));
    }
    let mut v = vec![0u8; len as usize];
    r.read_exact(&mut v).await?;
    Ok(v)
}

/// A frame header: kind and body length.
pub fn header(kind: u8, len: usize) -> [u8; 5] {
    let l = (len as u32).to_be_bytes();
    [kind, l[0], l[1], l[2], l[3]]
}

/// Writes one frame: header and body.
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, kind: u8, body: &[u8]) -> io::Result<()> {
    w.write_all(&header(kind, body.len())).await?;
    w.write_all(body).await
}

/// Reads a frame header; `None` at a clean end of stream.
pub async fn read_header<R: AsyncRead + Unpin>(r: &mut R) -> Result<Option<(u8, u32)>, ProtoError> {
    let mut h = [0u8; 5];
    match r.read_exact(&mut h[..1]).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    r.read_exact(&mut h[1..]).await?;
    let len = u32::from_be_bytes([h[1], h[2], h[3], h[4]]);
    if !(BURST..=STOP).contains(&h[0]) {
        return Err(ProtoError::Malformed(format!("unknown frame kind {}", h[0])));
    }
    if len > MAX_FRAME {
        return Err(ProtoError::Malformed(format!("a {len}-byte frame (at most {MAX_FRAME})")));
    }
    Ok(Some((h[0], len)))
}

/// Reads `len` bytes into `buf` (grown to fit, at most [`MAX_FRAME`]).
pub async fn read_into<R: AsyncRead + Unpin>(r: &mut R, len: u32, buf: &mut Vec<u8>) -> io::Result<()> {
    buf.resize(len as usize, 0);
    r.read_exact(buf).await.map(|_| ())
}

/// Skips `len` bytes, reading through `scratch`.
pub async fn skip<R: AsyncRead + Unpin>(r: &mut R, mut len: u64, scratch: &mut [u8]) -> io::Result<()> {
    while len > 0 {
        let n = (len as usize).min(scratch.len());
        r.read_exact(&mut scratch[..n]).await?;
        len -= n as u64;
    }
    Ok(())
}

/// A response frame's body: request, burst, then `fill` bytes of filler.
pub fn response(kind: u8, request: u32, burst: u8, fill: usize) -> Vec<u8> {
    let len = RESPONSE_PREFIX + fill;
    let mut v = Vec::with_capacity(5 + len);
    v.extend_from_slice(&header(kind, len));
    v.extend_from_slice(&request.to_be_bytes());
    v.push(burst);
    v.resize(5 + len, if kind == FINAL { b'F' } else { b'i' });
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params { requests: Some(3), test_id: Some("t".into()), ..Params::default() }
    }

    #[tokio::test]
    async fn hello_round_trips_and_versions_are_checked() {
        let mut buf = Vec::new();
        write_hello(&mut buf, PROTOCOL, &params()).await.expect("writes");
        assert_eq!(read_hello(&mut &buf[..]).await.expect("reads"), params());
        let mut other = Vec::new();
        write_hello(&mut other, PROTOCOL + 1, &params()).await.expect("writes");
        match read_hello(&mut &other[..]).await {
            Err(ProtoError::Version { ours, theirs }) => assert_eq!((ours, theirs), (PROTOCOL, PROTOCOL + 1)),
            other => panic!("{other:?}"),
        }
        assert!(matches!(read_hello(&mut &b"GET / HTTP/1.1\r\n"[..]).await, Err(ProtoError::NotIperfSiri)));
    }

    #[tokio::test]
    async fn answers_carry_status_and_version() {
        let mut a = Vec::new();
        write_answer(&mut a, ACCEPTED, "iperf-siri 0.1.0").await.expect("writes");
        assert_eq!(read_answer(&mut &a[..], PROTOCOL).await.expect("accepted"), "iperf-siri 0.1.0");
        assert!(matches!(read_answer(&mut &a[..], PROTOCOL + 1).await, Err(ProtoError::Version { .. })));
        let mut b = Vec::new();
        write_answer(&mut b, BUSY, "").await.expect("writes");
        assert!(matches!(read_answer(&mut &b[..], PROTOCOL).await, Err(ProtoError::Busy)));
    }

    #[tokio::test]
    async fn frames_are_bounded_and_typed() {
        let f = response(FINAL, 7, 8, 750);
        let mut r = &f[..];
        assert_eq!(read_header(&mut r).await.expect("reads"), Some((FINAL, 755)));
        let mut body = Vec::new();
        read_into(&mut r, 755, &mut body).await.expect("reads");
        assert_eq!(&body[..5], &[0, 0, 0, 7, 8]);
        assert_eq!(read_header(&mut r).await.expect("clean end"), None);
        let huge = header(DATA, MAX_FRAME as usize + 1);
        assert!(matches!(read_header(&mut &huge[..]).await, Err(ProtoError::Malformed(_))));
        assert!(matches!(read_header(&mut &[9u8, 0, 0, 0, 0][..]).await, Err(ProtoError::Malformed(_))));
        // A header cut short is an error, not a clean end.
        assert!(matches!(read_header(&mut &[DATA, 0][..]).await, Err(ProtoError::Io(_))));
    }
}

#[cfg(test)]
mod hello_tests {
    use super::*;

    /// Issue 52: a HELLO is read only up to `MAX_HELLO` (a 16 MiB one took the server from 7
    /// to 44 MB): a longer one is refused before its body is read.
    #[tokio::test]
    async fn a_hello_over_its_bound_is_refused_before_it_is_read() {
        let mut big = Vec::new();
        big.extend_from_slice(MAGIC);
        big.extend_from_slice(&PROTOCOL.to_be_bytes());
        big.extend_from_slice(&(MAX_HELLO + 1).to_be_bytes());
        // No body follows: reading one would wait for bytes that never come.
        let e = read_hello(&mut &big[..]).await.unwrap_err();
        assert!(e.to_string().contains("test request (at most 65536)"), "{e}");
        let ok = hello(PROTOCOL, &Params::default()).unwrap();
        assert!(ok.len() < 1024 && read_hello(&mut &ok[..]).await.is_ok());
    }
}
