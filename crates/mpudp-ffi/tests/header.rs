//! include/mpudp.h is what cbindgen makes of the crate's source: a change to the ABI that did
//! not regenerate the header fails here. `MPUDP_BLESS=1 cargo test -p mpudp-ffi --test header`
//! rewrites it.
#![allow(clippy::unwrap_used)]

#[test]
fn the_header_matches_the_source() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let config = cbindgen::Config::from_file(format!("{dir}/cbindgen.toml")).unwrap();
    let mut made = Vec::new();
    cbindgen::Builder::new().with_crate(dir).with_config(config).generate().unwrap().write(&mut made);
    let path = format!("{dir}/include/mpudp.h");
    if std::env::var_os("MPUDP_BLESS").is_some() {
        std::fs::write(&path, &made).unwrap();
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    assert!(
        checked_in == made,
        "include/mpudp.h differs from what cbindgen makes of src/ (MPUDP_BLESS=1 rewrites it):\n{}",
        String::from_utf8_lossy(&made)
    );
}
