use std::sync::{Arc, Mutex};

use coder_protocol::{Attachment, Role, ToolCall};
use coder_testkit::fuzz::Rng;
use pretty_assertions::assert_eq;
use serde_json::json;

use super::*;
use crate::model::ToolSpec;
use crate::model::anthropic::AnthropicApi;
use crate::model::openai::OpenAiApi;

fn openai() -> OpenAiApi {
    OpenAiApi {
        base_url: String::new(),
        api_key: None,
        max_tokens: None,
    }
}

fn anthropic() -> AnthropicApi {
    AnthropicApi {
        base_url: String::new(),
        api_key: None,
    }
}

fn tool(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("Does {name}."),
        parameters: Arc::new(crate::tools::Schema::new(
            json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        )),
    }
}

/// A random text: plain words, or with what JSON must escape (quotes, new lines, control
/// characters, non-ASCII).
fn text(rng: &mut Rng) -> String {
    let pieces = [
        "read the parser",
        "",
        "say \"hi\"",
        "line one\nline two",
        "tab\there",
        "\u{1}ctl",
        "naïve 中文 ✓",
        "<system-reminder>\nremember the todo list\n</system-reminder>",
        "back\\slash",
    ];
    (0..rng.below(3))
        .map(|_| *rng.pick(&pieces))
        .collect::<Vec<_>>()
        .join(" ")
}

fn image(rng: &mut Rng) -> Attachment {
    if rng.chance(2) {
        Attachment::Inline {
            media_type: "image/png".into(),
            data: "iVBORw0KGgo=".repeat(1 + rng.index(3)),
        }
    } else {
        Attachment::Url {
            url: format!("https://example.com/{}.png", rng.below(100)),
        }
    }
}

fn images(rng: &mut Rng) -> Vec<Attachment> {
    if rng.chance(4) {
        (0..1 + rng.index(2)).map(|_| image(rng)).collect()
    } else {
        Vec::new()
    }
}

/// A random history message: a person's input (with images), a reminder, a reply (with
/// thinking, tool calls whose arguments may not be JSON), a tool result (with images), a
/// system message.
fn message(rng: &mut Rng, calls: &mut u64) -> ChatMessage {
    match rng.below(5) {
        0 => {
            let mut input = ChatMessage::user(text(rng));
            input.attachments = images(rng);
            input
        }
        1 => {
            let tool_calls = (0..rng.below(3))
                .map(|_| {
                    *calls += 1;
                    let arguments = if rng.chance(5) {
                        "{not json".to_owned()
                    } else {
                        json!({"path": text(rng)}).to_string()
                    };
                    ToolCall::function(format!("call_{calls}"), "read".into(), arguments)
                })
                .collect();
            let mut reply = ChatMessage::assistant(text(rng), text(rng), tool_calls);
            if rng.chance(3) {
                reply.content = None;
            }
            reply
        }
        2 | 3 => {
            let mut result = ChatMessage::tool_result(&format!("call_{calls}"), "read", text(rng));
            result.attachments = images(rng);
            result
        }
        _ if rng.chance(2) => ChatMessage::system(text(rng)),
        _ => ChatMessage::user(format!(
            "<system-reminder>\n{}\n</system-reminder>",
            text(rng)
        )),
    }
}

/// How a request writes its history: natively, or as text after the tools' description.
#[derive(Clone, Copy, Debug)]
enum Form {
    Native,
    Text,
}

/// The request for `history` written in `form`.
fn request<'a>(
    history: &'a [ChatMessage],
    form: Form,
    lead: &'a [ChatMessage],
    tools: &'a [ToolSpec],
    cache: Option<&'a Mutex<WireHistory>>,
) -> ModelRequest<'a> {
    ModelRequest {
        model: "m",
        system: "You are a test.",
        lead: match form {
            Form::Native => &[],
            Form::Text => lead,
        },
        messages: history,
        as_text: match form {
            Form::Native => None,
            Form::Text => Some(crate::tool_prompt::message_as_text),
        },
        cache,
        tools: match form {
            Form::Native => tools,
            Form::Text => &[],
        },
        max_output_tokens: 100,
        prompt_cache_key: Some("key"),
    }
}

/// The body the code wrote before for `request` (the whole history each time).
fn written_before(api: &dyn WireApi, request: &ModelRequest<'_>) -> String {
    let messages: Vec<ChatMessage> = match request.as_text {
        Some(as_text) => request
            .lead
            .iter()
            .cloned()
            .chain(request.messages.iter().map(as_text))
            .collect(),
        None => request.messages.to_vec(),
    };
    let whole = ModelRequest {
        messages: &messages,
        ..*request
    };
    let body = match api.name() {
        "openai" => reference::openai::body(&whole),
        _ => reference::anthropic::body(&whole),
    };
    String::from_utf8(body.unwrap()).unwrap()
}

/// The body a request with `cache` writes now.
fn written(api: &dyn WireApi, request: &ModelRequest<'_>) -> String {
    String::from_utf8(request_body(api, request).unwrap()).unwrap()
}

#[test]
fn a_kept_history_writes_the_bytes_a_whole_one_did_through_appends_and_rewrites() {
    let mut rng = Rng::seeded(40);
    let apis: [&dyn WireApi; 2] = [&openai(), &anthropic()];
    let tools = [tool("grep"), tool("read")];
    let lead = crate::tool_prompt::request_lead(&tools);
    for _ in 0..40 {
        let mut history: Vec<ChatMessage> = Vec::new();
        let mut calls = 0;
        // One kept history per wire format, as a conversation keeps one for its provider;
        // its form changes now and then, as a model switch would change it.
        let caches: [Mutex<WireHistory>; 2] = Default::default();
        let mut form = Form::Native;
        for _ in 0..60 {
            match rng.below(12) {
                0 => {
                    // A new batch (a compaction, `/clear`, a plan): the conversation
                    // drops what was kept.
                    history = (0..rng.below(3))
                        .map(|_| message(&mut rng, &mut calls))
                        .collect();
                    caches.iter().for_each(|cache| lock(cache).clear());
                }
                1 if !history.is_empty() => {
                    // A text added to the last message (an interrupt after the tools).
                    let last = history.last_mut().unwrap();
                    last.content
                        .get_or_insert_with(String::new)
                        .push_str("\n[Request interrupted by user]");
                    caches.iter().for_each(|cache| lock(cache).clear());
                }
                2 if !history.is_empty() => {
                    // The last message replaced without the kept history being told:
                    // the check of the last message written catches it.
                    let last = history.len() - 1;
                    history[last] = ChatMessage::user(format!("replaced {}", rng.number()));
                }
                3 => {
                    form = match form {
                        Form::Native => Form::Text,
                        Form::Text => Form::Native,
                    }
                }
                _ => {
                    for _ in 0..1 + rng.index(4) {
                        history.push(message(&mut rng, &mut calls));
                    }
                }
            }
            for (api, cache) in apis.iter().zip(&caches) {
                let kept = request(&history, form, &lead, &tools, Some(cache));
                assert_eq!(
                    written(*api, &kept),
                    written_before(*api, &kept),
                    "{} {form:?} after {} messages",
                    api.name(),
                    history.len()
                );
            }
        }
    }
}

#[test]
fn a_request_without_a_kept_history_writes_it_whole_as_before() {
    let mut rng = Rng::seeded(41);
    let tools = [tool("read")];
    let lead = crate::tool_prompt::request_lead(&tools);
    let mut calls = 0;
    let history: Vec<ChatMessage> = (0..30).map(|_| message(&mut rng, &mut calls)).collect();
    for api in [&openai() as &dyn WireApi, &anthropic()] {
        for form in [Form::Native, Form::Text] {
            for end in [0, 1, 7, 30] {
                let plain = request(&history[..end], form, &lead, &tools, None);
                assert_eq!(written(api, &plain), written_before(api, &plain));
            }
        }
        // No system prompt and no tools.
        let bare = ModelRequest {
            system: "",
            prompt_cache_key: None,
            ..request(&history, Form::Native, &lead, &[], None)
        };
        assert_eq!(written(api, &bare), written_before(api, &bare));
    }
}

#[test]
fn only_what_was_recorded_since_is_written_again() {
    let api = openai();
    let cache = Mutex::<WireHistory>::default();
    let mut history = vec![ChatMessage::user("first")];
    written(
        &api,
        &request(&history, Form::Native, &[], &[], Some(&cache)),
    );
    // A message the kept bytes hold is not written again: changing it in place behind
    // the kept history's back (which the conversation never does) leaves the body as it
    // was, so the body can only have come from the bytes kept.
    history.push(ChatMessage::assistant(
        "second".into(),
        String::new(),
        Vec::new(),
    ));
    let before = written(
        &api,
        &request(&history, Form::Native, &[], &[], Some(&cache)),
    );
    history[0].content = Some("changed".into());
    history.push(ChatMessage::user("third"));
    let after = written(
        &api,
        &request(&history, Form::Native, &[], &[], Some(&cache)),
    );
    assert!(
        before.contains("\"first\"") && after.contains("\"first\""),
        "{after}"
    );
    assert!(after.contains("\"third\""), "{after}");
    // Cleared, it is written whole again.
    lock(&cache).clear();
    let whole = written(
        &api,
        &request(&history, Form::Native, &[], &[], Some(&cache)),
    );
    assert!(whole.contains("\"changed\""), "{whole}");
}

#[test]
fn the_snapshots_messages_are_written_as_before() {
    let mut rng = Rng::seeded(42);
    let mut calls = 0;
    let history: Vec<ChatMessage> = (0..200).map(|_| message(&mut rng, &mut calls)).collect();
    for end in [0, 1, 2, 5, 50, 200] {
        for keep_reasoning in [false, true] {
            assert_eq!(
                crate::model::chat_messages(&history[..end], keep_reasoning),
                reference::openai::chat_messages(&history[..end], keep_reasoning)
            );
        }
    }
    assert!(history.iter().any(|message| message.role == Role::Tool));
}
