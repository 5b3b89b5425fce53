//! Runs `examples/handshake.rs` (the whole protocol walk-through over `wire` and `crypto`) and
//! checks what it established.

#[path = "../examples/handshake.rs"]
mod demo;

#[test]
fn protocol_walk_through() {
    let o = demo::run(false);
    assert_eq!(o.server_got, b"GET /siri?burst=1");
    assert_eq!(o.client_got, b"HTTP/1.1 100 Continue");
    assert!(o.join_established);
    assert_eq!(o.fast_join_data, b"GET /siri?burst=1");
    assert!(o.replay_rejected);
    assert!(o.forgery_rejected);
    assert!(o.add_addr_verified);
    assert!(o.server_authenticated);
    // Sizes the spec promises: INITIAL padded to 1200; nothing exceeds the 1200-byte default.
    assert_eq!(o.packets[0], ("client INITIAL".to_string(), 1200));
    assert!(o.packets.iter().all(|(_, n)| *n <= 1200), "{:?}", o.packets);
}
