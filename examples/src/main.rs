//! `mesh-demo`: weighted select-one, round-robin and draining on a zlink channel.
//!
//! Run it without flags for the three-node demo in one process, or with `--role` for one
//! node per process (`mesh-demo --help` tells how).

mod demo;
mod standalone;

use std::process::ExitCode;

use zlink_examples::cli::{self, Command, USAGE};
use zlink_examples::setup::{self, COMMON_USAGE};

#[tokio::main]
async fn main() -> ExitCode {
    let (common, rest) = match setup::split_common(std::env::args().skip(1)) {
        Ok(split) => split,
        Err(e) => {
            eprintln!("mesh-demo: {e}\n\n{USAGE}\n\n{COMMON_USAGE}");
            return ExitCode::from(2);
        }
    };
    if common.help {
        println!("{USAGE}\n\n{COMMON_USAGE}");
        return ExitCode::SUCCESS;
    }
    let traced = setup::init_tracing("mesh-demo", common.otlp.as_deref());
    if let Err(e) = traced.and_then(|()| zlink_examples::operate::install(common.operate.clone())) {
        eprintln!("mesh-demo: {e}\n\n{USAGE}\n\n{COMMON_USAGE}");
        return ExitCode::from(2);
    }
    let command = match cli::parse(rest) {
        Ok(command) => command,
        Err(e) => {
            eprintln!("mesh-demo: {e}\n\n{USAGE}\n\n{COMMON_USAGE}");
            return ExitCode::from(2);
        }
    };
    let security = &common.security;
    let outcome = match command {
        Command::Help => {
            println!("{USAGE}\n\n{COMMON_USAGE}");
            Ok(())
        }
        Command::Demo => demo::run(security).await,
        Command::Server(args) => standalone::run_server(args, security).await,
        Command::Client(args) => standalone::run_client(args, security).await,
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mesh-demo: error: {e}");
            ExitCode::FAILURE
        }
    }
}
