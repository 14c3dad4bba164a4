//! `zlink-keys`: makes and reads the CURVE key files the examples (and any zlink node)
//! load.
//!
//! Run: `cargo run -p zlink-examples --bin zlink-keys -- new node-a`

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use zlink::security::{CurveKeypair, CurvePublicKey};

const USAGE: &str = "\
usage:
  zlink-keys new NAME [--dir DIR]
      Makes a new key pair: NAME.key holds the secret (readable by you only; give it to
      the node with --curve-key), NAME.pub the public key (hand it to the nodes that
      are to trust or dial this one, --trust). Prints the public key. Refuses to
      overwrite an existing file.

  zlink-keys public FILE
      Prints the public key of a key file (NAME.key or NAME.pub).

  -h, --help   prints this text";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("zlink-keys: {message}\n\n{USAGE}");
            ExitCode::from(2)
        }
        Err(Failure::Run(message)) => {
            eprintln!("zlink-keys: error: {message}");
            ExitCode::FAILURE
        }
    }
}

enum Failure {
    Usage(String),
    Run(String),
}

fn run(args: &[String]) -> Result<(), Failure> {
    let words: Vec<&str> = args.iter().map(String::as_str).collect();
    match words.as_slice() {
        [] => Err(Failure::Usage("say what to do".into())),
        ["-h" | "--help", ..] => {
            println!("{USAGE}");
            Ok(())
        }
        ["new", name] => new_pair(name, Path::new(".")),
        ["new", name, "--dir", dir] | ["new", "--dir", dir, name] => new_pair(name, Path::new(dir)),
        ["public", file] => {
            let key = CurvePublicKey::from_file(file)
                .map_err(|e| Failure::Run(format!("{file}: {e}")))?;
            println!("{key}");
            Ok(())
        }
        _ => Err(Failure::Usage(format!("cannot read {:?}", args.join(" ")))),
    }
}

fn new_pair(name: &str, dir: &Path) -> Result<(), Failure> {
    if name.is_empty() || name.contains(['/', '\\']) {
        return Err(Failure::Usage(format!(
            "{name:?} is not a file name (use --dir for where)"
        )));
    }
    let secret = dir.join(format!("{name}.key"));
    let public = dir.join(format!("{name}.pub"));
    for path in [&secret, &public] {
        if path.exists() {
            return Err(Failure::Run(format!(
                "{} exists; not overwriting a key (remove it first if you mean to)",
                path.display()
            )));
        }
    }
    let keys = CurveKeypair::generate();
    let written = |path: &PathBuf, e: std::io::Error| {
        Failure::Run(format!("cannot write {}: {e}", path.display()))
    };
    keys.write_file(&secret).map_err(|e| written(&secret, e))?;
    keys.public()
        .write_file(&public)
        .map_err(|e| written(&public, e))?;
    println!("{}", keys.public());
    eprintln!(
        "wrote {} (secret, mode 0600) and {} (public)",
        secret.display(),
        public.display()
    );
    Ok(())
}
