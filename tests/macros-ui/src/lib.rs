//! Empty: this crate exists for its `macros_ui` test (see `ui.rs`).
