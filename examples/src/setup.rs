//! What every example binary shares: logging that honours `RUST_LOG`, `--help`, CURVE
//! from the command line (`--curve-key FILE`, `--trust FILE|KEY`), and what an operator
//! sees (`--metrics ADDR`, `--dashboard ADDR`, `--dashboard-token TOKEN`; see
//! [`operate`](crate::operate)).
//!
//! Each binary takes these flags out of its arguments first ([`split_common`]) and parses
//! the rest itself.

use std::path::Path;

use zlink::security::{CurveKeypair, CurvePublicKey};
use zlink::RuntimeBuilder;

use crate::cli::UsageError;
use crate::operate::Operate;

/// The lines every binary's `--help` ends with.
pub const COMMON_USAGE: &str = "\
common flags (every example binary):
  --curve-key FILE     run CURVE: this process's (first) node proves the key pair in FILE
                       (make one with: cargo run -p zlink-examples --bin zlink-keys -- new NAME);
                       its other nodes get fresh pairs, and all of them trust each other
  --trust FILE|KEY     also admit this public key (a Z85 key, or a .pub or .key file);
                       repeatable
  --metrics ADDR       serve the process's Prometheus metrics at http://ADDR/metrics,
                       with /alive and /ready (ADDR: HOST:PORT, or a port on 127.0.0.1);
                       the process's other nodes take the next ports
  --dashboard ADDR     serve each node's live dashboard at http://ADDR/ (read-only)
  --otlp URL           export spans to an OpenTelemetry collector over OTLP/HTTP
                       (e.g. http://127.0.0.1:4318/v1/traces), carrying each trace
                       across the nodes; ZLINK_OTLP_FILTER picks the spans
                       (default info,zlink=debug)
  --dashboard-token T  turn the dashboard's controls (drain, move, reclaim, disconnect)
                       on for requests that carry this bearer token (16+ characters;
                       or ZLINK_DASHBOARD_TOKEN)
  -h, --help           prints this text

  RUST_LOG=info (or debug, zlink=debug, ...) shows the framework's own log on stderr;
  the default is warn.";

/// The start of every example's `main`: takes the common flags out of the arguments,
/// answers `--help` with `usage` and [`COMMON_USAGE`], and installs logging. `Ok` holds
/// the security and the arguments left for the binary; `Err` the code to exit with now.
pub fn begin(name: &str, usage: &str) -> Result<(Security, Vec<String>), std::process::ExitCode> {
    match split_common(std::env::args().skip(1)) {
        Ok((common, _)) if common.help => {
            println!("{usage}\n\n{COMMON_USAGE}");
            Err(std::process::ExitCode::SUCCESS)
        }
        Ok((common, rest)) => {
            let traced = init_tracing(name, common.otlp.as_deref());
            if let Err(e) = traced.and_then(|()| crate::operate::install(common.operate)) {
                eprintln!("{name}: {e}\n\n{usage}\n\n{COMMON_USAGE}");
                return Err(std::process::ExitCode::from(2));
            }
            Ok((common.security, rest))
        }
        Err(e) => {
            eprintln!("{name}: {e}\n\n{usage}\n\n{COMMON_USAGE}");
            Err(std::process::ExitCode::from(2))
        }
    }
}

/// Refuses arguments a binary does not take.
pub fn no_more_args(
    name: &str,
    usage: &str,
    rest: &[String],
) -> Result<(), std::process::ExitCode> {
    match rest.first() {
        None => Ok(()),
        Some(arg) => {
            eprintln!("{name}: unexpected argument {arg:?}\n\n{usage}\n\n{COMMON_USAGE}");
            Err(std::process::ExitCode::from(2))
        }
    }
}

/// Installs the log subscriber: `RUST_LOG` decides what is shown (default `warn`), on
/// stderr, so the example's own lines on stdout stay readable.
pub fn init_logging() {
    // Without an exporter nothing can fail.
    let _ = init_tracing("zlink-example", None);
}

/// [`init_logging`], and with `otlp` (a collector's OTLP/HTTP URL) the spans exported
/// there as service `service` (see [`otlp`](crate::otlp)).
pub fn init_tracing(service: &str, otlp: Option<&str>) -> Result<(), UsageError> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_filter(filter);
    let export = otlp
        .map(|url| crate::otlp::layer(url, service))
        .transpose()?;
    tracing_subscriber::registry().with(log).with(export).init();
    Ok(())
}

/// The flags every binary takes.
#[derive(Debug, Clone, Default)]
pub struct Common {
    /// `-h` or `--help` was given.
    pub help: bool,
    /// How this process's links are secured.
    pub security: Security,
    /// What it serves its operators.
    pub operate: Operate,
    /// `--otlp URL`: where it exports its spans.
    pub otlp: Option<String>,
}

/// Takes the common flags out of `args`; returns them and the rest, in order.
pub fn split_common(
    args: impl IntoIterator<Item = String>,
) -> Result<(Common, Vec<String>), UsageError> {
    let mut common = Common::default();
    let mut rest = Vec::new();
    let mut trust = Vec::new();
    let mut key_file = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => common.help = true,
            "--curve-key" => {
                key_file = Some(
                    args.next()
                        .ok_or_else(|| UsageError("--curve-key needs a key file".to_string()))?,
                )
            }
            "--trust" => trust.push(args.next().ok_or_else(|| {
                UsageError("--trust needs a key file or a Z85 public key".to_string())
            })?),
            "--metrics" | "--dashboard" => {
                let value = args
                    .next()
                    .ok_or_else(|| UsageError(format!("{arg} needs an address")))?;
                let addr = Operate::address(&arg, &value)?;
                match arg.as_str() {
                    "--metrics" => common.operate.metrics = Some(addr),
                    _ => common.operate.dashboard = Some(addr),
                }
            }
            "--otlp" => {
                common.otlp = Some(
                    args.next()
                        .ok_or_else(|| UsageError("--otlp needs a collector's URL".to_string()))?,
                )
            }
            "--dashboard-token" => {
                common.operate.token = Some(
                    args.next()
                        .ok_or_else(|| UsageError("--dashboard-token needs a token".to_string()))?,
                )
            }
            _ => rest.push(arg),
        }
    }
    if common.help {
        return Ok((common, rest));
    }
    if common.operate.token.is_none() {
        common.operate.token = std::env::var("ZLINK_DASHBOARD_TOKEN")
            .ok()
            .filter(|t| !t.is_empty() && common.operate.dashboard.is_some());
    }
    if let Some(file) = key_file {
        let keypair = CurveKeypair::from_file(&file)
            .map_err(|e| UsageError(format!("--curve-key {file}: {e}")))?;
        common.security = Security::curve(keypair);
    }
    for key in &trust {
        common.security.trust.push(public_key(key)?);
    }
    if common.security.keypair.is_none() && !common.security.trust.is_empty() {
        return Err(UsageError(
            "--trust needs --curve-key: only a CURVE node has a trust set".to_string(),
        ));
    }
    Ok((common, rest))
}

/// A public key given on the command line: 40 Z85 characters, or a key file (public or
/// secret) holding one.
pub fn public_key(text: &str) -> Result<CurvePublicKey, UsageError> {
    if text.len() == 40 && !Path::new(text).exists() {
        if let Ok(key) = CurvePublicKey::from_z85(text) {
            return Ok(key);
        }
    }
    CurvePublicKey::from_file(text).map_err(|e| {
        UsageError(format!(
            "{text:?} is neither a Z85 public key nor a readable key file: {e}"
        ))
    })
}

/// How many nodes one example process may run, each with its own key.
const PROCESS_NODES: usize = 8;

/// How one node's links are secured: NULL (plaintext, for one machine) or CURVE under
/// its key pair, trusting the keys given. From the command line it describes the
/// process's first node; [`node`](Self::node) gives the others, each with a key of its
/// own (a key is a node's identity: nodes never share one).
#[derive(Debug, Clone, Default)]
pub struct Security {
    /// This node's key pair, when CURVE is on.
    pub keypair: Option<CurveKeypair>,
    /// The other keys this node's listeners admit.
    pub trust: Vec<CurvePublicKey>,
    /// The key pairs of the process's nodes, the first one's included, when CURVE is on.
    process: Vec<CurveKeypair>,
}

impl Security {
    /// Plaintext (ZMTP NULL).
    pub fn null() -> Self {
        Security::default()
    }

    /// CURVE with `keypair` for the process's first node, fresh pairs for the others.
    pub fn curve(keypair: CurveKeypair) -> Self {
        let mut process = vec![keypair.clone()];
        process.extend((1..PROCESS_NODES).map(|_| CurveKeypair::generate()));
        Security {
            keypair: Some(keypair),
            trust: Vec::new(),
            process,
        }
    }

    /// The security of this process's node number `n` (0 is the first): its own key
    /// pair, and trust in every node of the process besides the keys given.
    pub fn node(&self, n: usize) -> Security {
        let Some(keypair) = self.process.get(n.min(PROCESS_NODES - 1)) else {
            return self.clone();
        };
        let mut trust = self.trust.clone();
        trust.extend(self.process.iter().map(CurveKeypair::public));
        Security {
            keypair: Some(keypair.clone()),
            trust,
            process: self.process.clone(),
        }
    }

    /// The public key of this process's node number `n`: what a node of the same process
    /// dials it with. `None` without CURVE.
    pub fn key_of(&self, n: usize) -> Option<CurvePublicKey> {
        self.process
            .get(n.min(PROCESS_NODES - 1))
            .map(CurveKeypair::public)
    }

    /// `builder` with this security: with CURVE, the key pair and every trusted key.
    pub fn apply(&self, mut builder: RuntimeBuilder) -> RuntimeBuilder {
        if let Some(keypair) = &self.keypair {
            builder = builder.curve(keypair.clone());
            for key in &self.trust {
                builder = builder.trust_key(*key);
            }
        }
        builder
    }

    /// One line saying how links are secured, for the start of an example's output.
    pub fn describe(&self) -> String {
        match &self.keypair {
            None => {
                "links: NULL (plaintext, for one machine; --curve-key turns CURVE on)".to_string()
            }
            Some(keypair) => format!(
                "links: CURVE; the first node's public key is {}, trusting {} key(s) besides \
                 this process's nodes",
                keypair.public(),
                self.trust.len()
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn common_flags_are_taken_out_and_the_rest_kept_in_order() {
        let key = CurveKeypair::generate().public().to_z85();
        let dir = std::env::temp_dir().join(format!("zlink-setup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("node.key");
        CurveKeypair::generate()
            .write_file(&file)
            .expect("key file");
        let line = format!(
            "--role server --curve-key {} --rid a --trust {key}",
            file.display()
        );
        let (common, rest) = split_common(args(&line)).expect("valid flags");
        assert_eq!(rest, args("--role server --rid a"));
        assert!(common.security.keypair.is_some());
        assert_eq!(common.security.trust[0].to_z85(), key);
        std::fs::remove_dir_all(&dir).expect("clean up");
    }

    #[test]
    fn bad_key_flags_say_what_is_wrong() {
        let missing = split_common(args("--curve-key")).expect_err("no value");
        assert!(missing.0.contains("--curve-key needs"), "{missing}");
        let absent = split_common(args("--curve-key /no/such/file")).expect_err("no file");
        assert!(absent.0.contains("/no/such/file"), "{absent}");
        let alone = split_common(args(&format!(
            "--trust {}",
            CurveKeypair::generate().public()
        )))
        .expect_err("trust without a key");
        assert!(alone.0.contains("needs --curve-key"), "{alone}");
        let garbage = split_common(args("--trust not-a-key")).expect_err("garbage");
        assert!(garbage.0.contains("neither a Z85 public key"), "{garbage}");
    }
}
