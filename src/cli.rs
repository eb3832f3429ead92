//! Command line: `emisor serve`, `emisor tax-sim`, `emisor admin …`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::admin::cli::AdminCommand;
use crate::config::{Overrides, Settings};

#[derive(Debug, Parser)]
#[command(
    name = "emisor",
    version,
    about = "Colombian electronic tax documents: build, sign, transmit, store"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Args)]
pub struct ConfigArgs {
    /// Config file layered over the embedded config.toml.
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Data directory (sled store, outbox, demo-keys.json).
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

// Parsed once per run: variant sizes do not matter here.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP API (and the in-process authority simulator).
    Serve {
        #[command(flatten)]
        config: ConfigArgs,
        /// Listen address, e.g. 127.0.0.1:0 for a free port.
        #[arg(long, value_name = "ADDR")]
        bind: Option<String>,
    },
    /// Run the tax-authority simulator alone.
    TaxSim {
        /// Listen address of the simulator.
        #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8090")]
        bind: String,
    },
    /// Provision companies, software, resolutions, certificates and keys in
    /// the data dir (the server must be stopped; use /admin while it runs).
    Admin {
        #[command(flatten)]
        config: ConfigArgs,
        #[command(subcommand)]
        command: AdminCommand,
    },
}

impl ConfigArgs {
    pub fn settings(&self, bind: Option<String>) -> anyhow::Result<Settings> {
        Ok(Settings::load(&Overrides {
            config_file: self.config.clone(),
            bind,
            data_dir: self.data_dir.clone(),
        })?)
    }
}

/// Entry point of the binary; returns the process exit code.
pub fn run() -> i32 {
    // Before any file is made: the data dir and the key are the owner's.
    crate::security::permissions::restrict_umask();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve { config, bind } => config
            .settings(bind)
            .and_then(crate::startup::serve_blocking),
        Command::TaxSim { bind } => crate::startup::tax_sim_blocking(&bind),
        Command::Admin { config, command } => config
            .settings(None)
            .and_then(|s| crate::admin::cli::run(&s, command)),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}
