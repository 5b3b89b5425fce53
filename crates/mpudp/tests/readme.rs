//! README.md's library example is `examples/readme.rs`, word for word: the example is built by
//! the tests (`--examples`), so the README's code compiles.
#![allow(clippy::unwrap_used)]

#[test]
fn the_readme_shows_the_example_that_compiles() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let example = std::fs::read_to_string(root.join("crates/mpudp/examples/readme.rs")).unwrap();
    let block = readme
        .split("```rust\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("README.md has a ```rust block");
    assert_eq!(block, example, "README.md's ```rust block must be crates/mpudp/examples/readme.rs");
}
