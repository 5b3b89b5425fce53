//! `iperf-siri`: see the library's documentation and `iperf-siri --help`.

use clap::{CommandFactory, FromArgMatches};
use iperf_siri::cli::{Cli, Command};
use std::process::ExitCode;

fn main() -> ExitCode {
    // A bug must still end in one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        eprintln!("iperf-siri: internal error{at}: {what} (please report it)");
    }));
    // `-J` (alone or among short flags): a failure is also a JSON object on stdout.
    let json = std::env::args().skip(1).any(|a| {
        a == "--json"
            || (a.starts_with('-')
                && !a.starts_with("--")
                && a[1..].chars().all(|c| c.is_ascii_alphanumeric())
                && a.contains('J'))
    });
    let fail = |message: &str| {
        eprintln!("iperf-siri: {message}");
        if json && !iperf_siri::out::stdout_used() {
            println!("{}", serde_json::json!({ "error": message }));
        }
        ExitCode::from(1)
    };
    let parsed = Cli::command().try_get_matches().and_then(|m| Cli::from_arg_matches(&m).map(|c| (c, m)));
    let (cli, matches) = match parsed {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                let _ = e.print();
                return ExitCode::SUCCESS;
            }
            return fail(&iperf_siri::one_line(&e));
        }
    };
    if cli.command.is_none() {
        if let Err(m) = iperf_siri::check::roles(&cli.run, &matches).and_then(|()| iperf_siri::check::values(&cli.run))
        {
            return fail(&m);
        }
    }
    // The libraries' logs on stderr: RUST_LOG's directives if set, else warnings, and with -V
    // the transport's decisions (failover, fail-back, oracle verdicts, paths, connections).
    let verbose = cli.command.is_none() && cli.run.verbose;
    let default = if verbose { "info,mpcore=debug,mpudp=debug" } else { "warn" };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).try_init();
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("iperf-siri: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let result = rt.block_on(async {
        match &cli.command {
            Some(Command::Demo(d)) if d.resume => iperf_siri::demo_resume::run(d).await,
            Some(Command::Demo(d)) => iperf_siri::demo::run(d).await,
            Some(Command::Keygen(k)) => iperf_siri::keygen(&k.file),
            Some(Command::Timeline(t)) => iperf_siri::timeline_command(t),
            Some(Command::FleetRules(f)) => iperf_siri::fleet::rules(f),
            None if cli.run.server => iperf_siri::server(&cli.run).await,
            None if cli.run.client.is_some() => iperf_siri::client(&cli.run).await,
            None => Err("say -s (server), -c HOST (client) or `demo`; see --help".into()),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(&message),
    }
}
