//! `coder-mock-model`: the scripted model server as a program, for tests in other languages.
//!
//! Prints `http://127.0.0.1:PORT` on its first stdout line, then serves until killed.
//! `GET /_mock/requests` returns the recorded requests; `POST /_mock/script` appends
//! responses (a JSON array of `MockResponse`).

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use coder_testkit::{MockModelServer, MockResponse};

#[derive(Parser)]
#[command(about = "A scripted OpenAI/Anthropic-compatible model server for tests")]
struct Args {
    /// A JSON file holding an array of scripted responses.
    #[arg(long)]
    script: Option<PathBuf>,
    /// The port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let script: Vec<MockResponse> = match &args.script {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading script {}", path.display()))?;
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?
        }
        None => Vec::new(),
    };
    let server = MockModelServer::bind(script, args.port).await?;
    println!("http://{}", server.addr());
    tokio::signal::ctrl_c().await?;
    Ok(())
}
