//! [`RedisServer`]: a private `redis-server` for one test, on a free port of 127.0.0.1,
//! which the test can stop, pause (SIGSTOP), resume and restart.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a starting server may take to answer PING.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// A `redis-server` child process. Killed when dropped.
pub struct RedisServer {
    port: u16,
    child: Mutex<Option<Child>>,
}

impl RedisServer {
    /// Starts a server without persistence on a free port and waits until it answers.
    /// Fails with a clear message when `redis-server` is not installed.
    pub fn start() -> std::io::Result<RedisServer> {
        let mut last = None;
        for _ in 0..5 {
            let port = free_port()?;
            match spawn(port) {
                Ok(child) => {
                    return Ok(RedisServer {
                        port,
                        child: Mutex::new(Some(child)),
                    })
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(e),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("redis-server did not start")))
    }

    /// The URL clients connect to.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    fn child(&self) -> std::sync::MutexGuard<'_, Option<Child>> {
        self.child.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn signal(&self, signal: &str) -> std::io::Result<()> {
        let pid = self
            .child()
            .as_ref()
            .map(Child::id)
            .ok_or_else(|| std::io::Error::other("redis-server is stopped"))?;
        let status = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()?;
        if status.success() {
            Ok(())
        } else {
            Err(std::io::Error::other(format!(
                "kill -{signal} {pid} failed"
            )))
        }
    }

    /// Sends one command (RESP) and returns the first line of the reply, e.g. `+OK`.
    /// For tests that set up or inspect keys directly.
    pub fn command(&self, args: &[&str]) -> std::io::Result<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port))?;
        stream.set_read_timeout(Some(Duration::from_secs(5)))?;
        let mut request = format!("*{}\r\n", args.len());
        for arg in args {
            request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
        }
        stream.write_all(request.as_bytes())?;
        let mut line = Vec::new();
        let mut byte = [0u8; 1];
        while !line.ends_with(b"\r\n") {
            stream.read_exact(&mut byte)?;
            line.push(byte[0]);
        }
        line.truncate(line.len() - 2);
        String::from_utf8(line).map_err(std::io::Error::other)
    }

    /// Freezes the server (SIGSTOP): connections stay open, nothing is answered.
    pub fn pause(&self) -> std::io::Result<()> {
        self.signal("STOP")
    }

    /// Lets a paused server run again (SIGCONT).
    pub fn resume(&self) -> std::io::Result<()> {
        self.signal("CONT")
    }

    /// Kills the server; its data is gone.
    pub fn stop(&self) {
        if let Some(mut child) = self.child().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server and starts an empty one on the same port.
    pub fn restart(&self) -> std::io::Result<()> {
        self.stop();
        let child = spawn(self.port)?;
        *self.child() = Some(child);
        Ok(())
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        // A paused server ignores SIGKILL until continued on some systems; continue first.
        let _ = self.resume();
        self.stop();
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn spawn(port: u16) -> std::io::Result<Child> {
    let mut child = Command::new("redis-server")
        .args(["--port", &port.to_string()])
        .args(["--bind", "127.0.0.1"])
        .args(["--save", ""])
        .args(["--appendonly", "no"])
        .args(["--protected-mode", "no"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                std::io::Error::new(
                    e.kind(),
                    "redis-server is not installed (.ci/run installs it; or apt-get install redis-server)",
                )
            } else {
                e
            }
        })?;
    let started = Instant::now();
    while started.elapsed() < READY_TIMEOUT {
        if let Some(status) = child.try_wait()? {
            return Err(std::io::Error::other(format!(
                "redis-server on port {port} exited: {status}"
            )));
        }
        if answers_ping(port) {
            return Ok(child);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    Err(std::io::Error::other(format!(
        "redis-server on port {port} did not answer within {READY_TIMEOUT:?}"
    )))
}

fn answers_ping(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    if stream.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut reply = [0u8; 7];
    stream.read_exact(&mut reply).is_ok() && &reply == b"+PONG\r\n"
}
