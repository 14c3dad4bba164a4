//! [`RedisServer`]: a private `redis-server` for one test, on a free port of 127.0.0.1,
//! which the test can stop, pause (SIGSTOP), resume and restart, optionally as a replica
//! of another one.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// How long a starting server may take to answer PING.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a new replica may take to report `master_link_status:up`.
const REPLICATION_TIMEOUT: Duration = Duration::from_secs(10);

/// How long one command may wait for its reply.
const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// A `redis-server` child process. Killed when dropped.
pub struct RedisServer {
    port: u16,
    /// Arguments besides the defaults of [`spawn`], kept for [`RedisServer::restart`].
    args: Vec<String>,
    child: Mutex<Option<Child>>,
}

impl RedisServer {
    /// Starts a server without persistence on a free port and waits until it answers.
    /// Fails with a clear message when `redis-server` is not installed.
    pub fn start() -> std::io::Result<RedisServer> {
        RedisServer::start_with(free_port, &|_| Vec::new())
    }

    /// Starts a server without persistence that replicates `primary`, and returns once
    /// the replica reports `master_link_status:up` and the primary lists it as online
    /// (within 10 s). It loads the primary's
    /// data in memory, without writing files.
    pub fn start_replica_of(primary: &RedisServer) -> std::io::Result<RedisServer> {
        let primary_port = primary.port.to_string();
        let replica = RedisServer::start_with(free_port, &|_| {
            ["--replicaof", "127.0.0.1", &primary_port]
                .into_iter()
                .chain(["--repl-diskless-load", "swapdb"])
                .map(String::from)
                .collect()
        })?;
        let started = Instant::now();
        let mut last = String::from("no INFO reply yet");
        while started.elapsed() < REPLICATION_TIMEOUT {
            // Both sides must agree: the replica's link is up, the primary counts it
            // online, and it acknowledges a write (right after the initial sync it may
            // not yet, and WAIT would not count it).
            let online = format!("port={},state=online", replica.port);
            match replica.info("replication") {
                Ok(info)
                    if info_field(&info, "master_link_status") == Some("up")
                        && primary
                            .info("replication")
                            .is_ok_and(|p| p.contains(&online))
                        && write_acknowledged(primary.port) =>
                {
                    return Ok(replica)
                }
                Ok(info) => {
                    last = format!(
                        "master_link_status:{}",
                        info_field(&info, "master_link_status").unwrap_or("missing")
                    )
                }
                Err(e) => last = e.to_string(),
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(std::io::Error::other(format!(
            "replica on port {} of 127.0.0.1:{primary_port} did not report \
             master_link_status:up within {REPLICATION_TIMEOUT:?} (last: {last})",
            replica.port
        )))
    }

    /// Starts a server on a port chosen by `pick_port`, with `extra_args(port)` after the
    /// defaults of [`spawn`]; tries a few ports when one turns out to be taken.
    pub(crate) fn start_with(
        pick_port: fn() -> std::io::Result<u16>,
        extra_args: &dyn Fn(u16) -> Vec<String>,
    ) -> std::io::Result<RedisServer> {
        let mut last = None;
        for _ in 0..5 {
            let port = pick_port()?;
            let args = extra_args(port);
            match spawn(port, &args) {
                Ok(child) => {
                    return Ok(RedisServer {
                        port,
                        args,
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

    /// Whether the process is still there: neither stopped nor exited on its own. A paused
    /// server is running.
    pub(crate) fn is_running(&self) -> bool {
        matches!(self.child().as_mut().map(Child::try_wait), Some(Ok(None)))
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

    /// Sends `INFO <section>` (e.g. `"replication"`, `"server"`) and returns the whole
    /// reply text: `field:value` lines separated by CRLF, with `# Section` headers.
    pub fn info(&self, section: &str) -> std::io::Result<String> {
        self.bulk_command(&["INFO", section], REPLY_TIMEOUT)
    }

    /// Sends one command and returns its whole reply when that is a bulk string (e.g.
    /// `INFO`, `CLUSTER NODES`, `GET`) or a status/integer (its text without the prefix).
    /// A nil reply, an error reply or no reply within `timeout` is an error.
    pub(crate) fn bulk_command(&self, args: &[&str], timeout: Duration) -> std::io::Result<String> {
        request(self.port, args, timeout)
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

    /// Stops the server and starts an empty one on the same port, with the same
    /// arguments (a replica replicates the same primary again).
    pub fn restart(&self) -> std::io::Result<()> {
        self.stop();
        let child = spawn(self.port, &self.args)?;
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

/// A port no port-0 bind or outgoing connection takes, so that a stopped server restarts on
/// it.
fn free_port() -> std::io::Result<u16> {
    Ok(crate::unused_port())
}

/// Starts `redis-server` on `port` without persistence, with `extra_args` after the
/// defaults, and waits until that very process answers PING.
fn spawn(port: u16, extra_args: &[String]) -> std::io::Result<Child> {
    let mut child = Command::new("redis-server")
        .args(["--port", &port.to_string()])
        .args(["--bind", "127.0.0.1"])
        .args(["--save", ""])
        .args(["--appendonly", "no"])
        .args(["--protected-mode", "no"])
        // Replicas sync at once instead of the primary waiting 5 s for more of them.
        .args(["--repl-diskless-sync-delay", "0"])
        .args(extra_args)
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
            // Another test's server may hold the port (ours then exits): check who answered.
            match request(port, &["INFO", "server"], Duration::from_millis(500)) {
                Ok(info) if info_field(&info, "process_id") == Some(&child.id().to_string()) => {
                    return Ok(child)
                }
                Ok(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::AddrInUse,
                        format!("port {port} is taken by another redis-server"),
                    ));
                }
                Err(_) => {}
            }
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

/// The value of `field` in INFO-style text (`field:value` lines), if present.
pub(crate) fn info_field<'a>(info: &'a str, field: &str) -> Option<&'a str> {
    info.lines().find_map(|line| {
        line.strip_prefix(field)
            .and_then(|rest| rest.strip_prefix(':'))
            .map(str::trim_end)
    })
}

/// Sends one command (RESP) to 127.0.0.1:`port` and reads a bulk, status or integer reply.
/// Whether a write on one connection to the primary on `port` is acknowledged by a
/// replica within 100 ms (`SET` then `WAIT 1 100`, pipelined).
fn write_acknowledged(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(REPLY_TIMEOUT));
    let probe = "*3\r\n$3\r\nSET\r\n$21\r\n__testkit_replica_ack\r\n$1\r\n1\r\n\
                 *3\r\n$4\r\nWAIT\r\n$1\r\n1\r\n$3\r\n100\r\n";
    if stream.write_all(probe.as_bytes()).is_err() {
        return false;
    }
    let mut reader = BufReader::new(stream);
    let mut set = String::new();
    let mut wait = String::new();
    reader.read_line(&mut set).is_ok()
        && reader.read_line(&mut wait).is_ok()
        && set == "+OK\r\n"
        && wait == ":1\r\n"
}

fn request(port: u16, args: &[&str], timeout: Duration) -> std::io::Result<String> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    stream.write_all(request.as_bytes())?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let Some(line) = line.strip_suffix("\r\n") else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!("redis on port {port}: incomplete reply {line:?} to {args:?}"),
        ));
    };
    let invalid = || {
        std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("redis on port {port}: unexpected reply {line:?} to {args:?}"),
        )
    };
    match line.split_at_checked(1).ok_or_else(invalid)? {
        ("+" | ":", text) => Ok(text.to_string()),
        ("-", error) => Err(std::io::Error::other(format!(
            "redis on port {port} answered {args:?} with an error: {error}"
        ))),
        ("$", "-1") => Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("redis on port {port}: nil reply to {args:?}"),
        )),
        ("$", len) => {
            let len: usize = len.parse().map_err(|_| invalid())?;
            let mut body = vec![0u8; len + 2];
            reader.read_exact(&mut body)?;
            body.truncate(len);
            String::from_utf8(body).map_err(std::io::Error::other)
        }
        _ => Err(invalid()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polls `condition` every 20 ms; panics with `what` after `timeout`.
    fn poll(timeout: Duration, what: &str, mut condition: impl FnMut() -> bool) {
        let started = Instant::now();
        while !condition() {
            assert!(
                started.elapsed() < timeout,
                "not within {timeout:?}: {what}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn redis_replica_sees_writes_of_its_primary() {
        let primary = RedisServer::start().expect("primary");
        let started = Instant::now();
        let replica = RedisServer::start_replica_of(&primary).expect("replica");
        eprintln!("replica up in {:?}", started.elapsed());
        let info = replica.info("replication").expect("INFO");
        assert_eq!(info_field(&info, "role"), Some("slave"));
        assert_eq!(info_field(&info, "master_link_status"), Some("up"));
        assert_eq!(
            info_field(&info, "master_port"),
            Some(primary.port().to_string().as_str())
        );

        assert_eq!(primary.command(&["SET", "k", "v"]).expect("SET"), "+OK");
        poll(Duration::from_secs(5), "replica sees k=v", || {
            replica
                .bulk_command(&["GET", "k"], REPLY_TIMEOUT)
                .is_ok_and(|value| value == "v")
        });
        assert!(
            replica
                .command(&["SET", "k", "w"])
                .expect("SET")
                .starts_with("-READONLY"),
            "a replica refuses writes"
        );
    }
}
