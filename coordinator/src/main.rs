//! `grind`: the coordinator and its admin command line.

use clap::Parser;
use grind_coordinator::cli::{clap_error, dispatch, Cli};

fn main() {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let e = clap_error(e);
            eprintln!("{}", e.report());
            std::process::exit(e.exit_code());
        }
    };
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        // A log write that fails (full disk) must not panic the thread that logged.
        .log_internal_errors(false)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("grind: cannot start the IO runtime: {e}");
            std::process::exit(1);
        }
    };
    if let Err(e) = runtime.block_on(dispatch(cli)) {
        eprintln!("{}", e.report());
        std::process::exit(e.exit_code());
    }
}
