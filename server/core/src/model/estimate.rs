//! Token estimates for providers that stream no usage (llama.cpp's Python server, some
//! proxies): about four bytes a token, the rule of thumb for BPE vocabularies on English and
//! code. A real tokenizer would cost more than the whole stream it measures (see
//! docs/benchmarks.md), and the figures only feed displays, so the rough count is enough.

use coder_protocol::TokenUsage;

use super::{ModelRequest, ModelResponse};

fn count(text: &str) -> u64 {
    u64::try_from(text.len().div_ceil(4)).unwrap_or(u64::MAX)
}

/// Estimated usage of one call, marked `estimated`.
pub(crate) fn estimate_usage(request: &ModelRequest<'_>, response: &ModelResponse) -> TokenUsage {
    let mut input = count(request.system);
    for message in request.messages {
        input += count(message.content.as_deref().unwrap_or_default());
        for call in &message.tool_calls {
            input += count(&call.function.name) + count(&call.function.arguments);
        }
    }
    for tool in request.tools {
        input += count(&tool.name) + count(&tool.description) + count(&tool.parameters.to_string());
    }
    let mut output = count(&response.text) + count(&response.reasoning);
    for call in &response.tool_calls {
        output += count(&call.function.name) + count(&call.function.arguments);
    }
    TokenUsage {
        input_tokens: input,
        output_tokens: output,
        total_tokens: input + output,
        estimated: true,
        ..TokenUsage::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use coder_protocol::ChatMessage;

    #[test]
    fn estimates_count_prompt_and_reply() {
        let messages = [ChatMessage::user("hello there, how are you today?")];
        let request = ModelRequest {
            model: "m",
            system: "You are helpful.",
            messages: &messages,
            tools: &[],
            max_output_tokens: 10,
            prompt_cache_key: None,
        };
        let response = ModelResponse {
            text: "Fine, thanks.".into(),
            ..ModelResponse::default()
        };
        let usage = estimate_usage(&request, &response);
        assert!(usage.estimated);
        assert!((8..=16).contains(&usage.input_tokens), "{usage:?}");
        assert!((3..=4).contains(&usage.output_tokens), "{usage:?}");
        assert_eq!(usage.total_tokens, usage.input_tokens + usage.output_tokens);
    }
}
