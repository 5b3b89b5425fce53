//! `fastjoin`: see ARCHITECTURE.md. This crate is built under issue 5; it holds no code yet.
