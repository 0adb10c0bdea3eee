//! `/rewind` and `/fork` at the terminal: `/rewind` lists the conversation's points (the
//! inputs typed into it, numbered, first line each), `/rewind N` shows what going back to
//! point N would change and asks to confirm, then goes back; `/fork N` starts a new session
//! from point N and goes on in it. The engine decides and says what happened
//! ([`Engine::rewind_points`], [`Engine::rewind`], [`Engine::fork`]); the terminal only
//! asks. `/undo` stays the core's: the last turn.

use coder_core::Engine;
use coder_core::control_chars::neutralize;
use coder_protocol::ConversationId;

use super::input::{Answer, Input};
use crate::render::Human;

/// What a `/rewind` or `/fork` line asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PointCommand {
    List,
    Rewind(usize),
    Fork(usize),
}

/// Whether `text` is `/rewind [N]` or `/fork N`; `Err` says what is wrong with one.
pub(super) fn point_command(text: &str) -> Option<Result<PointCommand, String>> {
    let (name, args) = text.split_once(char::is_whitespace).unwrap_or((text, ""));
    let args = args.trim();
    let point = |usage: &str| {
        args.parse::<usize>()
            .map_err(|_| format!("{usage}: N is a point's number, as /rewind lists them"))
    };
    match name {
        "/rewind" if args.is_empty() => Some(Ok(PointCommand::List)),
        "/rewind" => Some(point("/rewind N").map(PointCommand::Rewind)),
        "/fork" => Some(point("/fork N").map(PointCommand::Fork)),
        _ => None,
    }
}

/// Runs `command` in `conversation`, asking before a rewind changes anything.
pub(super) async fn run(
    engine: &Engine,
    conversation: ConversationId,
    command: PointCommand,
    input: &Input,
    printer: &mut Human,
) -> anyhow::Result<()> {
    let said = match command {
        PointCommand::List => engine
            .command(conversation, "/rewind")
            .map(|listed| listed.text),
        PointCommand::Rewind(point) => {
            match rewind(engine, conversation, point, input, printer).await? {
                Some(said) => said,
                None => return Ok(()),
            }
        }
        PointCommand::Fork(point) => engine
            .fork(conversation, point)
            .await
            .map(|forked| forked.text),
    };
    match said {
        Ok(text) => printer.say(&neutralize(&text))?,
        Err(err) => printer.say(&format!("error: {}", neutralize(&err.to_string())))?,
    }
    Ok(())
}

/// Shows what going back to `point` would change and asks; the rewind's text once done,
/// `None` when the person said no.
async fn rewind(
    engine: &Engine,
    conversation: ConversationId,
    point: usize,
    input: &Input,
    printer: &mut Human,
) -> anyhow::Result<Option<Result<String, coder_core::EngineError>>> {
    let preview = match engine.rewind(conversation, point, true).await {
        Ok(preview) => preview,
        Err(err) => return Ok(Some(Err(err))),
    };
    printer.say(&neutralize(&preview.text))?;
    printer.flush()?;
    let yes = match input
        .read_answer("Rewind? [y/N] ".to_owned(), vec!['y', 'n'])
        .await
    {
        Answer::Line(line) => matches!(line.trim().to_lowercase().as_str(), "y" | "yes"),
        Answer::Interrupted | Answer::Eof | Answer::Action(..) => false,
    };
    if !yes {
        printer.say("not rewound")?;
        return Ok(None);
    }
    Ok(Some(
        engine
            .rewind(conversation, point, false)
            .await
            .map(|done| done.text),
    ))
}
