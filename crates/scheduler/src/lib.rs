//! `scheduler`: see ARCHITECTURE.md. This crate is built under issue 4; it holds no code yet.
