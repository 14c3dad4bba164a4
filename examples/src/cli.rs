//! The command line of `mesh-demo`, parsed by hand.
//!
//! Without flags the program runs the three-node demo in one process. With `--role` it
//! runs one node per process: a server that serves until Ctrl-C, or a client that sends
//! some requests and exits.

use std::fmt;

use crate::nodes::{ANY_LOCAL_PORT, DEFAULT_WEIGHT};

/// The usage text printed for `--help` and after a bad flag.
pub const USAGE: &str = "\
usage:
  mesh-demo
      Runs one client and two servers in this process and shows round-robin,
      weighted selection and draining on the channel \"greet\".

  mesh-demo --role server --rid RID [--listen ENDPOINT] [--weight N] [--redis URL]
      Runs one server node until Ctrl-C.

  mesh-demo --role client (--peer ENDPOINT ... | --redis URL)
            [--rid RID] [--listen ENDPOINT] [--requests N] [--servers N]
      Runs one client node: waits for its servers, sends N requests (default 10)
      on \"greet\", prints which server answered each, and exits.

flags:
  --role server|client   which node this process runs
  --rid RID              the node's routing id (client default: client)
  --listen ENDPOINT      where the node listens (default: tcp://127.0.0.1:0)
  --peer ENDPOINT[,KEY]  a server to connect to, e.g. tcp://127.0.0.1:5601; with CURVE
                         add its public key (file or Z85): tcp://127.0.0.1:5601,server-a.pub
  --weight N             the server's weight for \"greet\", 0..=10000 (default: 100)
  --requests N           how many requests the client sends, 1..=1000000 (default: 10)
  --redis URL            find the other nodes through this Redis Location Store,
                         e.g. redis://127.0.0.1:6379/ (no --peer needed)
  --servers N            how many servers the client waits for, 1..=1000
                         (default: the number of --peer flags, or 1 with --redis)
  -h, --help             prints this text

example (three terminals):
  mesh-demo --role server --rid server-a --listen tcp://127.0.0.1:5601
  mesh-demo --role server --rid server-b --listen tcp://127.0.0.1:5602
  mesh-demo --role client --rid client --listen tcp://127.0.0.1:5600 \\
            --peer tcp://127.0.0.1:5601 --peer tcp://127.0.0.1:5602

the same with discovery through Redis (no endpoints to list):
  mesh-demo --role server --rid server-a --redis redis://127.0.0.1:6379/
  mesh-demo --role server --rid server-b --redis redis://127.0.0.1:6379/
  mesh-demo --role client --redis redis://127.0.0.1:6379/ --servers 2

with CURVE (keys from zlink-keys; each server trusts the client, the client knows
each server's key):
  mesh-demo --role server --rid server-a --listen tcp://127.0.0.1:5601 \\
            --curve-key server-a.key --trust client.pub
  mesh-demo --role client --curve-key client.key \\
            --peer tcp://127.0.0.1:5601,server-a.pub
";

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// No flags: the three-node demo in one process.
    Demo,
    /// `--help`: print [`USAGE`].
    Help,
    /// `--role server`.
    Server(ServerArgs),
    /// `--role client`.
    Client(ClientArgs),
}

/// The settings of a server process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerArgs {
    /// The node's RID.
    pub rid: String,
    /// The endpoint to listen on.
    pub listen: String,
    /// The node's weight for the channel.
    pub weight: u32,
    /// The Redis Location Store to publish in and discover through.
    pub redis: Option<String>,
}

/// The settings of a client process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientArgs {
    /// The node's RID.
    pub rid: String,
    /// The endpoint to listen on.
    pub listen: String,
    /// The servers' endpoints, in the order given, each with `,KEY` (its public key, for
    /// CURVE) when one was given.
    pub peers: Vec<String>,
    /// How many requests to send.
    pub requests: u32,
    /// The Redis Location Store to discover servers through.
    pub redis: Option<String>,
    /// How many servers to wait for before sending.
    pub servers: usize,
}

/// A command line that cannot be run; the message says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

fn usage_error(message: impl Into<String>) -> UsageError {
    UsageError(message.into())
}

/// The flags as given, before checking which role needs which.
#[derive(Default)]
struct Flags {
    role: Option<String>,
    rid: Option<String>,
    listen: Option<String>,
    peers: Vec<String>,
    weight: Option<String>,
    requests: Option<String>,
    redis: Option<String>,
    servers: Option<String>,
}

/// Parses the arguments after the program name.
///
/// Flags take their value as the next argument (`--rid server-a`) or after `=`
/// (`--rid=server-a`). `--peer` may be repeated; any other flag may appear once.
pub fn parse<I>(args: I) -> Result<Command, UsageError>
where
    I: IntoIterator,
    I::Item: Into<String>,
{
    let mut args = args.into_iter().map(Into::into);
    let mut flags = Flags::default();
    let mut any = false;
    while let Some(arg) = args.next() {
        any = true;
        if arg == "-h" || arg == "--help" {
            return Ok(Command::Help);
        }
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) if name.starts_with("--") => {
                (name.to_string(), Some(value.to_string()))
            }
            _ => (arg, None),
        };
        let slot = match name.as_str() {
            "--role" => &mut flags.role,
            "--rid" => &mut flags.rid,
            "--listen" => &mut flags.listen,
            "--weight" => &mut flags.weight,
            "--requests" => &mut flags.requests,
            "--redis" => &mut flags.redis,
            "--servers" => &mut flags.servers,
            "--peer" => {
                let value = value_of(&name, inline, &mut args)?;
                flags.peers.push(value);
                continue;
            }
            other if other.starts_with('-') => {
                return Err(usage_error(format!("unknown flag {other}")))
            }
            other => return Err(usage_error(format!("unexpected argument {other:?}"))),
        };
        if slot.is_some() {
            return Err(usage_error(format!("{name} given more than once")));
        }
        *slot = Some(value_of(&name, inline, &mut args)?);
    }
    if !any {
        return Ok(Command::Demo);
    }
    match flags.role.as_deref() {
        Some("server") => server_args(flags).map(Command::Server),
        Some("client") => client_args(flags).map(Command::Client),
        Some(other) => Err(usage_error(format!(
            "--role must be server or client, not {other:?}"
        ))),
        None => Err(usage_error(
            "--role server|client is required when flags are given",
        )),
    }
}

fn value_of(
    name: &str,
    inline: Option<String>,
    rest: &mut impl Iterator<Item = String>,
) -> Result<String, UsageError> {
    let value = match inline {
        Some(value) => value,
        None => rest
            .next()
            .filter(|v| !v.starts_with("--"))
            .ok_or_else(|| usage_error(format!("{name} needs a value")))?,
    };
    if value.is_empty() {
        return Err(usage_error(format!("{name} needs a non-empty value")));
    }
    Ok(value)
}

fn endpoint(name: &str, value: String) -> Result<String, UsageError> {
    let host_port = value
        .strip_prefix("tcp://")
        .and_then(|rest| rest.rsplit_once(':'));
    let valid =
        host_port.is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if valid {
        Ok(value)
    } else {
        Err(usage_error(format!(
            "{name} must be a tcp:// endpoint such as tcp://127.0.0.1:5601, not {value:?}"
        )))
    }
}

fn redis_url(value: String) -> Result<String, UsageError> {
    let known = ["redis://", "rediss://", "redis+unix://"];
    if known.iter().any(|scheme| value.starts_with(scheme)) {
        Ok(value)
    } else {
        Err(usage_error(format!(
            "--redis must be a Redis URL such as redis://127.0.0.1:6379/, not {value:?}"
        )))
    }
}

fn number(name: &str, value: &str, min: u32, max: u32) -> Result<u32, UsageError> {
    match value.parse::<u32>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(usage_error(format!(
            "{name} must be a whole number from {min} to {max}, not {value:?}"
        ))),
    }
}

fn server_args(flags: Flags) -> Result<ServerArgs, UsageError> {
    if !flags.peers.is_empty() {
        return Err(usage_error("--peer is for --role client"));
    }
    if flags.requests.is_some() {
        return Err(usage_error("--requests is for --role client"));
    }
    if flags.servers.is_some() {
        return Err(usage_error("--servers is for --role client"));
    }
    let rid = flags
        .rid
        .ok_or_else(|| usage_error("--role server needs --rid"))?;
    let listen = endpoint(
        "--listen",
        flags.listen.unwrap_or_else(|| ANY_LOCAL_PORT.to_string()),
    )?;
    let weight = match flags.weight {
        Some(w) => number("--weight", &w, 0, 10_000)?,
        None => DEFAULT_WEIGHT,
    };
    Ok(ServerArgs {
        rid,
        listen,
        weight,
        redis: flags.redis.map(redis_url).transpose()?,
    })
}

fn client_args(flags: Flags) -> Result<ClientArgs, UsageError> {
    if flags.weight.is_some() {
        return Err(usage_error("--weight is for --role server"));
    }
    if flags.peers.is_empty() && flags.redis.is_none() {
        return Err(usage_error(
            "--role client needs at least one --peer, or --redis to discover servers",
        ));
    }
    let peers = flags
        .peers
        .into_iter()
        .map(|p| match p.split_once(',') {
            // ENDPOINT,KEY: the server's public key, for CURVE.
            Some((at, key)) => endpoint("--peer", at.to_string()).map(|at| format!("{at},{key}")),
            None => endpoint("--peer", p),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let listen = endpoint(
        "--listen",
        flags.listen.unwrap_or_else(|| ANY_LOCAL_PORT.to_string()),
    )?;
    let requests = match flags.requests {
        Some(n) => number("--requests", &n, 1, 1_000_000)?,
        None => 10,
    };
    let servers = match flags.servers {
        Some(n) => number("--servers", &n, 1, 1000)? as usize,
        None => peers.len().max(1),
    };
    Ok(ClientArgs {
        rid: flags.rid.unwrap_or_else(|| "client".to_string()),
        listen,
        peers,
        requests,
        redis: flags.redis.map(redis_url).transpose()?,
        servers,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_str(line: &str) -> Result<Command, UsageError> {
        parse(line.split_whitespace())
    }

    #[test]
    fn no_flags_runs_the_demo() {
        assert_eq!(parse(Vec::<String>::new()), Ok(Command::Demo));
        assert_eq!(parse_str("--help"), Ok(Command::Help));
    }

    #[test]
    fn server_flags() {
        let cmd = parse_str("--role server --rid server-a --listen tcp://127.0.0.1:5601");
        assert_eq!(
            cmd,
            Ok(Command::Server(ServerArgs {
                rid: "server-a".into(),
                listen: "tcp://127.0.0.1:5601".into(),
                weight: 100,
                redis: None,
            }))
        );
        let cmd = parse_str("--role=server --rid=b --weight=0");
        assert!(matches!(
            cmd,
            Ok(Command::Server(ServerArgs { weight: 0, .. }))
        ));
    }

    #[test]
    fn client_flags_with_repeated_peers() {
        let cmd = parse_str(
            "--role client --rid client --listen tcp://127.0.0.1:5600 \
             --peer tcp://127.0.0.1:5601 --peer tcp://127.0.0.1:5602 --requests 4",
        );
        assert_eq!(
            cmd,
            Ok(Command::Client(ClientArgs {
                rid: "client".into(),
                listen: "tcp://127.0.0.1:5600".into(),
                peers: vec!["tcp://127.0.0.1:5601".into(), "tcp://127.0.0.1:5602".into()],
                requests: 4,
                redis: None,
                servers: 2,
            }))
        );
    }

    #[test]
    fn redis_discovery_flags() {
        let cmd = parse_str("--role client --redis redis://127.0.0.1:6379/ --servers 3");
        assert!(matches!(
            cmd,
            Ok(Command::Client(ClientArgs { servers: 3, ref redis, ref peers, .. }))
                if redis.as_deref() == Some("redis://127.0.0.1:6379/") && peers.is_empty()
        ));
        let cmd = parse_str("--role server --rid a --redis redis://localhost/");
        assert!(matches!(
            cmd,
            Ok(Command::Server(ServerArgs { redis: Some(_), .. }))
        ));
    }

    #[test]
    fn bad_command_lines_are_usage_errors() {
        for line in [
            "--rid x",
            "--role boss",
            "--role server",
            "--role server --rid a --peer tcp://127.0.0.1:1",
            "--role server --rid a --weight 10001",
            "--role server --rid a --rid b",
            "--role client",
            "--role client --peer 127.0.0.1:5601",
            "--role client --peer tcp://127.0.0.1",
            "--role client --peer tcp://127.0.0.1:99999",
            "--role client --peer tcp://127.0.0.1:1 --requests 0",
            "--role client --peer tcp://127.0.0.1:1 --requests many",
            "--role client --peer",
            "--role client --peer --requests 3",
            "--role client --peer tcp://127.0.0.1:1 --verbose",
            "--role client --peer tcp://127.0.0.1:1 extra",
            "--role client --redis localhost:6379",
            "--role client --redis redis://x/ --servers 0",
            "--role server --rid a --servers 2",
        ] {
            assert!(parse_str(line).is_err(), "{line} should be rejected");
        }
    }
}
