//! What a person can do about a provider failure: which key to check after a 401, the model
//! name and the base URL after a 404, and a model server that stopped when nothing listens
//! on a loopback address.

use std::net::IpAddr;

use reqwest::StatusCode;
use reqwest::Url;

use crate::config::{ApiKey, ProviderConfig, ProviderKind};

/// What the client knows about where its requests go, for the hints.
pub(crate) struct Hints {
    kind: ProviderKind,
    base_url: String,
    key: Option<ApiKey>,
}

impl Hints {
    pub fn new(provider: &ProviderConfig) -> Self {
        Self {
            kind: provider.kind,
            base_url: provider.base_url.clone(),
            key: provider.api_key.clone(),
        }
    }

    /// A sentence to add to an HTTP error status, when there is something to check.
    pub fn for_status(&self, status: StatusCode, model: &str) -> Option<String> {
        match status {
            StatusCode::UNAUTHORIZED => Some(self.key_hint()),
            StatusCode::NOT_FOUND => Some(self.not_found_hint(model)),
            _ => None,
        }
    }

    fn key_hint(&self) -> String {
        let variable = match self.kind {
            ProviderKind::OpenAi => "OPENAI_API_KEY",
            ProviderKind::Anthropic => "ANTHROPIC_API_KEY",
        };
        match &self.key {
            Some(key) => match key.source() {
                Some(source) => format!("check the API key: it came from {source}"),
                None => "check the API key the engine was given".to_owned(),
            },
            None => {
                format!("no API key was sent: set {variable} or \"apiKey\" in .coder/config.json")
            }
        }
    }

    fn not_found_hint(&self, model: &str) -> String {
        let url = &self.base_url;
        match self.kind {
            ProviderKind::OpenAi if !url.ends_with("/v1") => format!(
                "check the model name \"{model}\", and whether the base URL needs /v1 \
                 (coder posts to {url}/chat/completions; most OpenAI-compatible servers \
                 serve {url}/v1/chat/completions)"
            ),
            ProviderKind::OpenAi => format!(
                "check the model name \"{model}\", and whether the base URL needs /v1 \
                 (coder posts to {url}/chat/completions)"
            ),
            ProviderKind::Anthropic => format!(
                "check the model name \"{model}\", and the base URL: coder adds /v1/messages \
                 to {url}, so it should not end with /v1"
            ),
        }
    }
}

/// When `err` is a refused connection to a loopback address, what to say instead of
/// retrying: nothing listens there, and a local model server that stopped is the usual
/// cause.
pub(crate) fn refused_on_loopback(err: &reqwest::Error, url: &str) -> Option<String> {
    if !err.is_connect() || !is_loopback(url) {
        return None;
    }
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            return Some(format!(
                "nothing is listening at {url} (connection refused): the model server may \
                 have stopped; start it again, or check the base URL"
            ));
        }
        source = cause.source();
    }
    None
}

fn is_loopback(url: &str) -> bool {
    let Ok(url) = Url::parse(url) else {
        return false;
    };
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<IpAddr>() {
        Ok(ip) => ip.is_loopback() || ip.is_unspecified(),
        Err(_) => host.eq_ignore_ascii_case("localhost"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised() {
        for url in [
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://[::1]:8080",
            "http://127.0.0.2/v1",
        ] {
            assert!(is_loopback(url), "{url}");
        }
        for url in ["https://api.openai.com/v1", "http://10.0.0.5:8080", "nope"] {
            assert!(!is_loopback(url), "{url}");
        }
    }

    #[test]
    fn a_404_names_the_model_and_the_v1_question() {
        let hints = |kind, base_url: &str| Hints {
            kind,
            base_url: base_url.to_owned(),
            key: None,
        };
        let hint = hints(ProviderKind::OpenAi, "http://127.0.0.1:8080")
            .for_status(StatusCode::NOT_FOUND, "qwen")
            .unwrap();
        assert!(
            hint.contains("\"qwen\"") && hint.contains("http://127.0.0.1:8080/v1/chat/completions"),
            "{hint}"
        );
        let hint = hints(ProviderKind::Anthropic, "https://x.test/v1")
            .for_status(StatusCode::NOT_FOUND, "claude")
            .unwrap();
        assert!(hint.contains("should not end with /v1"), "{hint}");
        let hint = hints(ProviderKind::Anthropic, "https://x.test")
            .for_status(StatusCode::UNAUTHORIZED, "claude")
            .unwrap();
        assert!(hint.contains("set ANTHROPIC_API_KEY"), "{hint}");
    }
}
