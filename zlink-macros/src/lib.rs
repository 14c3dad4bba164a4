//! Procedural macros for zlink (messages, channel handler groups). Filled in by the macros work.
