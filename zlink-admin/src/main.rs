//! `zlink-admin`: the operator's command line for a zlink mesh (see `--help`).

mod cli;
mod commands;

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use zlink::store::{LocationStore, RedisLocationStore, RedisOptions};

use crate::cli::{Cli, StoreArgs};

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let store = match open_store(&cli.store) {
        Ok(store) => store,
        Err(e) => {
            eprintln!("zlink-admin: {e}");
            return ExitCode::from(1);
        }
    };
    let objects = zlink::object::recovery::Objects::over(store);
    match commands::run(&objects, cli.command, cli.json).await {
        Ok(commands::Done::Clean) => ExitCode::SUCCESS,
        Ok(commands::Done::SomethingRefused) => ExitCode::from(3),
        Err(e) => {
            eprintln!("zlink-admin: {e}");
            ExitCode::from(1)
        }
    }
}

fn open_store(args: &StoreArgs) -> Result<Arc<dyn LocationStore>, String> {
    let options = match (&args.redis, args.cluster.is_empty()) {
        (Some(url), true) => RedisOptions::new(url.clone(), args.prefix.clone()),
        (None, false) => RedisOptions::cluster(args.cluster.clone(), args.prefix.clone()),
        _ => return Err("name the Location Store: --redis URL or --cluster URL[,URL...]".into()),
    }
    .operation_timeout(Duration::from_millis(args.timeout_ms.max(1)));
    let store = RedisLocationStore::new(options).map_err(|e| e.to_string())?;
    Ok(Arc::new(store))
}
