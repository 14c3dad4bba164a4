//! The state an example's Spot or Actor keeps across a move, written as JSON: what its
//! [`RelocationState`](zlink::object::RelocationState) implementation calls.

use serde::de::DeserializeOwned;
use serde::Serialize;

/// `state` as JSON bytes.
pub fn capture<T: Serialize>(state: &T) -> zlink::Result<Vec<u8>> {
    serde_json::to_vec(state).map_err(|e| zlink::Error::InvalidArgument(e.to_string()))
}

/// The state `bytes` hold (as [`capture`] wrote it).
pub fn restore<T: DeserializeOwned>(bytes: &[u8]) -> zlink::Result<T> {
    serde_json::from_slice(bytes).map_err(|e| zlink::Error::InvalidArgument(e.to_string()))
}
