//! What the mock server answers: a script of responses, each a status or a stream of chunks.

use serde::{Deserialize, Serialize};

/// One scripted answer to one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum MockResponse {
    /// A 200 SSE stream built from `chunks`, with `delay_ms` before each SSE event.
    Stream {
        chunks: Vec<Chunk>,
        #[serde(default)]
        delay_ms: u64,
        #[serde(default)]
        fault: Option<StreamFault>,
    },
    /// A 200 SSE body rendered before the request arrives and written at once: the floor
    /// for benchmarks, where reading the reply costs the client only the read. Build it
    /// with [`MockResponse::prerendered`]; it answers requests of its own wire format.
    Rendered {
        /// `"openai"` or `"anthropic"` (`"responses"` is accepted too, though nothing builds
        /// one).
        format: String,
        body: String,
    },
    /// A 200 SSE stream that never ends: `head` is rendered as a stream would be, then
    /// `repeat` over and over, as fast as the client reads, until the client goes away. A
    /// provider gone wrong (a model looping on its output, a proxy replaying a buffer).
    /// Build it with [`MockResponse::endless`].
    Endless {
        #[serde(default)]
        head: Vec<Chunk>,
        repeat: Chunk,
    },
    /// A plain HTTP error status, optionally with a `Retry-After` header.
    Status {
        status: u16,
        #[serde(default)]
        body: String,
        #[serde(default)]
        retry_after_secs: Option<u64>,
    },
}

/// One piece of a model reply, rendered into the requested wire format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Chunk {
    Text {
        text: String,
    },
    Thinking {
        text: String,
    },
    /// A whole tool call, streamed as a header and two argument fragments.
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
    /// A raw OpenAI tool-call delta, to interleave several calls by index (Chat Completions
    /// only: the other formats leave it out).
    ToolCallDelta {
        index: u32,
        #[serde(default)]
        id: Option<String>,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        arguments: String,
    },
    /// Usage reported at the end of the stream.
    Usage {
        input_tokens: u64,
        output_tokens: u64,
    },
    /// A raw SSE `data:` payload sent as is, for example malformed JSON.
    Raw {
        data: String,
    },
    /// Bytes written to the wire as they are, without SSE framing (in either format): a
    /// line that never ends, a broken frame.
    Verbatim {
        text: String,
    },
}

/// A failure injected into a stream after `after` SSE events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum StreamFault {
    /// The connection is cut without finishing the stream.
    Drop { after: usize },
    /// The stream stays open and silent until the client goes away.
    Stall { after: usize },
}

impl MockResponse {
    /// A stream of the given chunks.
    pub fn stream(chunks: Vec<Chunk>) -> Self {
        Self::Stream {
            chunks,
            delay_ms: 0,
            fault: None,
        }
    }

    /// A reply that is just `text`, in one delta.
    pub fn text(text: &str) -> Self {
        Self::stream(vec![Chunk::text(text)])
    }

    /// A reply of `count` text deltas, each `piece`, sent as fast as possible.
    pub fn text_deltas(count: usize, piece: &str) -> Self {
        Self::stream((0..count).map(|_| Chunk::text(piece)).collect())
    }

    /// `chunks` rendered now, in the OpenAI wire format, into one SSE body that is written
    /// at once when a request takes it.
    pub fn prerendered(chunks: &[Chunk]) -> Self {
        Self::Rendered {
            format: crate::render::WireFormat::OpenAi.name().to_owned(),
            body: crate::render::WireFormat::OpenAi.render(chunks).concat(),
        }
    }

    /// The SSE body of a [`Self::prerendered`] reply (`None` for any other kind).
    pub fn rendered_body(&self) -> Option<&str> {
        match self {
            Self::Rendered { body, .. } => Some(body),
            _ => None,
        }
    }

    /// `chunks` rendered now, in the Anthropic wire format (see [`Self::prerendered`]).
    pub fn prerendered_anthropic(chunks: &[Chunk]) -> Self {
        Self::Rendered {
            format: crate::render::WireFormat::Anthropic.name().to_owned(),
            body: crate::render::WireFormat::Anthropic.render(chunks).concat(),
        }
    }

    /// A reply that starts with `head` and then repeats `repeat` until the client goes away.
    pub fn endless(head: Vec<Chunk>, repeat: Chunk) -> Self {
        Self::Endless { head, repeat }
    }

    /// A reply made of one tool call.
    pub fn tool_call(id: &str, name: &str, arguments: serde_json::Value) -> Self {
        Self::stream(vec![Chunk::tool_call(id, name, arguments)])
    }

    /// An HTTP error status with a short body.
    pub fn status(status: u16) -> Self {
        Self::Status {
            status,
            body: format!("{{\"error\":{{\"message\":\"mock status {status}\"}}}}"),
            retry_after_secs: None,
        }
    }

    /// A 429 carrying `Retry-After: secs`.
    pub fn rate_limited(secs: u64) -> Self {
        Self::Status {
            status: 429,
            body: "{\"error\":{\"message\":\"rate limited\"}}".to_owned(),
            retry_after_secs: Some(secs),
        }
    }

    /// Waits `delay_ms` before each SSE event of a stream.
    pub fn with_delay(mut self, delay: u64) -> Self {
        if let Self::Stream { delay_ms, .. } = &mut self {
            *delay_ms = delay;
        }
        self
    }

    /// Injects a fault into a stream.
    pub fn with_fault(mut self, new_fault: StreamFault) -> Self {
        if let Self::Stream { fault, .. } = &mut self {
            *fault = Some(new_fault);
        }
        self
    }
}

impl Chunk {
    pub fn text(text: &str) -> Self {
        Self::Text {
            text: text.to_owned(),
        }
    }

    pub fn thinking(text: &str) -> Self {
        Self::Thinking {
            text: text.to_owned(),
        }
    }

    pub fn tool_call(id: &str, name: &str, arguments: serde_json::Value) -> Self {
        Self::ToolCall {
            id: id.to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_string(),
        }
    }

    pub fn usage(input_tokens: u64, output_tokens: u64) -> Self {
        Self::Usage {
            input_tokens,
            output_tokens,
        }
    }
}
