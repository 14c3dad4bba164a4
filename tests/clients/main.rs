//! The STREAM client libraries against real gateway nodes: the JavaScript client in
//! headless Chromium through the gateway chat's page and Zone World's game and ops pages. (Its Node tests run from the
//! examples crate, which has the example's binary: `examples/tests/js_client.rs`.)

mod chat_page;
mod zone_world_page;
