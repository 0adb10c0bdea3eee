//! `coder-mock-model`: the scripted model server as a program, for tests in other languages.
//!
//! Prints `http://127.0.0.1:PORT` on its first stdout line, then serves until killed.
//! `GET /_mock/requests` returns the recorded requests; `POST /_mock/script` appends
//! responses (a JSON array of `MockResponse`). With `--plain`, a script of replies rendered
//! before (`{"kind": "rendered", ...}`) is served by a plain thread that writes each at
//! once (`coder_testkit::PlainServer`), for a benchmark's floor; nothing else is served.

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
    /// Serve the script's pre-rendered replies from a plain thread, each written at once
    /// (a benchmark's floor); no `/_mock` endpoints; `--port` is not used.
    #[arg(long)]
    plain: bool,
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
    if args.plain {
        let server = coder_testkit::PlainServer::start()?;
        for (index, reply) in script.iter().enumerate() {
            let body = reply.rendered_body().with_context(|| {
                format!("--plain serves rendered replies only; reply {index} is not one")
            })?;
            server.push(body);
        }
        println!("http://{}", server.addr());
        tokio::signal::ctrl_c().await?;
        return Ok(());
    }
    let server = MockModelServer::bind(script, args.port).await?;
    println!("http://{}", server.addr());
    tokio::signal::ctrl_c().await?;
    Ok(())
}
