//! `mesh-demo`: weighted select-one, round-robin and draining on a zlink channel.
//!
//! Run it without flags for the three-node demo in one process, or with `--role` for one
//! node per process (`mesh-demo --help` tells how).

mod demo;
mod standalone;

use std::process::ExitCode;

use tracing_subscriber::EnvFilter;
use zlink_examples::cli::{self, Command, USAGE};

#[tokio::main]
async fn main() -> ExitCode {
    // Quiet by default so the demo's own lines stay readable; RUST_LOG=info shows more.
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();

    let command = match cli::parse(std::env::args().skip(1)) {
        Ok(command) => command,
        Err(e) => {
            eprintln!("mesh-demo: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let outcome = match command {
        Command::Help => {
            println!("{USAGE}");
            Ok(())
        }
        Command::Demo => demo::run().await,
        Command::Server(args) => standalone::run_server(args).await,
        Command::Client(args) => standalone::run_client(args).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mesh-demo: error: {e}");
            ExitCode::FAILURE
        }
    }
}
