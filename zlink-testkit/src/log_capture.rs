//! [`LogCapture`]: the WARN and ERROR lines a test produced, to count what a node says
//! and how often.

use std::cell::RefCell;
use std::io::Write;
use std::sync::{Arc, Mutex, OnceLock};

use tracing_subscriber::fmt::MakeWriter;

type Buffer = Arc<Mutex<Vec<u8>>>;

thread_local! {
    /// Where this thread's lines go while a capture lives on it.
    static CAPTURE: RefCell<Option<Buffer>> = const { RefCell::new(None) };
}

/// Whether the process-wide subscriber that routes lines to their thread's capture is
/// installed (it is not when the test binary set another one first).
static ROUTING: OnceLock<bool> = OnceLock::new();

/// Collects, for as long as it lives, every WARN and ERROR line logged on this thread:
/// with `#[tokio::test]` (a current-thread runtime) that is everything the test's nodes
/// log. Lines are plain text with their fields.
///
/// The lines are routed by a process-wide subscriber rather than a thread's default one:
/// a log call site first reached on a thread without a subscriber (another test, running
/// alongside) could otherwise be cached as disabled for every thread.
pub struct LogCapture {
    lines: Buffer,
    _fallback: Option<tracing::subscriber::DefaultGuard>,
}

impl LogCapture {
    /// Starts capturing this thread's WARN and ERROR lines.
    pub fn warnings() -> Self {
        let routed = *ROUTING.get_or_init(|| {
            tracing::subscriber::set_global_default(subscriber(ThreadSink)).is_ok()
        });
        let lines = Buffer::default();
        CAPTURE.with(|capture| *capture.borrow_mut() = Some(lines.clone()));
        LogCapture {
            _fallback: (!routed)
                .then(|| tracing::subscriber::set_default(subscriber(Sink(lines.clone())))),
            lines,
        }
    }

    /// Every line so far.
    pub fn lines(&self) -> Vec<String> {
        let bytes = self.lines.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes)
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// The lines so far that contain `text`.
    pub fn matching(&self, text: &str) -> Vec<String> {
        self.lines()
            .into_iter()
            .filter(|l| l.contains(text))
            .collect()
    }
}

impl Drop for LogCapture {
    fn drop(&mut self) {
        CAPTURE.with(|capture| capture.borrow_mut().take());
    }
}

fn subscriber<W>(writer: W) -> impl tracing::Subscriber + Send + Sync
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(writer)
        .finish()
}

/// Appends to one buffer.
#[derive(Clone)]
struct Sink(Buffer);

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut lines) = self.0.lock() {
            lines.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Sink {
    type Writer = Sink;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// Appends to the capture of the thread the line is logged on, if it has one.
struct ThreadSink;

impl Write for ThreadSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        CAPTURE.with(|capture| {
            if let Some(lines) = capture.borrow().as_ref() {
                if let Ok(mut lines) = lines.lock() {
                    lines.extend_from_slice(buf);
                }
            }
        });
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for ThreadSink {
    type Writer = ThreadSink;

    fn make_writer(&'a self) -> Self::Writer {
        ThreadSink
    }
}
