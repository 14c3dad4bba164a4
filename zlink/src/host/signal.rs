//! The signals that ask a process to stop, for an application's main loop: Ctrl-C
//! (SIGINT) everywhere, and SIGTERM on Unix (what `kill`, systemd, Docker and Kubernetes
//! send before they kill).

/// Which signal asked the process to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopSignal {
    /// Ctrl-C: SIGINT.
    Interrupt,
    /// SIGTERM.
    Terminate,
}

/// Waits until the process is asked to stop (Ctrl-C, or SIGTERM on Unix), and says by
/// which signal. An error when the handlers cannot be installed.
///
/// Most applications want [`Runtime::shutdown_on_signal`](crate::Runtime::shutdown_on_signal),
/// which waits for this and then shuts the node down.
pub async fn stop_signal() -> std::io::Result<StopSignal> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut terminate = signal(SignalKind::terminate())?;
        tokio::select! {
            interrupted = tokio::signal::ctrl_c() => interrupted.map(|()| StopSignal::Interrupt),
            _ = terminate.recv() => Ok(StopSignal::Terminate),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c()
            .await
            .map(|()| StopSignal::Interrupt)
    }
}
