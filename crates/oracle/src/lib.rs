//! `oracle`: see ARCHITECTURE.md. This crate is built under issue 6; it holds no code yet.
