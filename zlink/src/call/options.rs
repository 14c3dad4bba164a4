//! Per-call options.

use std::time::Duration;

use crate::wire::Metadata;
use crate::Result;

/// Options for one call: timeout and metadata.
///
/// ```
/// # fn main() -> zlink::Result<()> {
/// use std::time::Duration;
/// let options = zlink::CallOptions::new()
///     .timeout(Duration::from_secs(2))
///     .metadata("trace-id", "abc")?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct CallOptions {
    pub(crate) timeout: Option<Duration>,
    pub(crate) metadata: Metadata,
}

impl CallOptions {
    /// Defaults: the runtime's request/send timeout and no metadata.
    pub fn new() -> Self {
        Self::default()
    }

    /// For a request, the one deadline for the whole call (default 30 s). For a send, the
    /// longest wait for the local queue to accept (default 1 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Adds a metadata entry (last value for a key wins). Fails when the metadata would
    /// exceed 1024 bytes or the key is empty.
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Result<Self> {
        self.metadata.insert(key, value)?;
        Ok(self)
    }

    /// Replaces the metadata.
    pub fn with_metadata(mut self, metadata: Metadata) -> Self {
        self.metadata = metadata;
        self
    }
}
