//! The models a provider offers (`GET /models`), for a front end that lets a person pick
//! one when adding a model.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{ModelClient, ModelSettings};
use crate::error::{EngineError, ErrorKind};

/// The list gives up when it has not come whole within this long.
const TIMEOUT: Duration = Duration::from_secs(30);

/// The most bytes of a list taken (OpenRouter's 300-odd models are about 400 KB).
const LIST_LIMIT: usize = 8 * 1024 * 1024;

/// One model of a provider's list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListedModel {
    pub id: String,
    /// Who offers it, when the provider says (OpenAI's `owned_by`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owned_by: Option<String>,
    /// A name for people, when the provider gives one (Anthropic's `display_name`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
}

#[derive(Deserialize)]
struct ListBody {
    data: Vec<ListEntry>,
}

#[derive(Deserialize)]
struct ListEntry {
    id: String,
    #[serde(default)]
    owned_by: Option<String>,
    #[serde(default)]
    display_name: Option<String>,
}

/// The models `settings`' provider lists (OpenAI's `GET {baseUrl}/models`, Anthropic's
/// `GET {baseUrl}/v1/models`), in the provider's order. `settings.model` is not used. A
/// provider that fails, answers something else than a list, or takes longer than 30 s is a
/// `provider` error saying so.
pub async fn list_models(settings: &ModelSettings) -> Result<Vec<ListedModel>, EngineError> {
    let client = ModelClient::one_shot(settings, TIMEOUT)?;
    let failed = |reason: String| {
        EngineError::new(
            ErrorKind::Provider,
            format!(
                "the models of {} could not be listed: {reason}",
                settings.provider.base_url
            ),
        )
    };
    let body = match tokio::time::timeout(TIMEOUT, client.get_models(LIST_LIMIT)).await {
        Ok(Ok(body)) => body,
        Ok(Err(reason)) => return Err(failed(reason)),
        Err(_) => return Err(failed(format!("no answer within {} s", TIMEOUT.as_secs()))),
    };
    parse(&body).map_err(failed)
}

/// A provider's answer as its models.
fn parse(body: &[u8]) -> Result<Vec<ListedModel>, String> {
    let list: ListBody = serde_json::from_slice(body)
        .map_err(|err| format!("the answer is not a list of models ({err})"))?;
    Ok(list
        .data
        .into_iter()
        .map(|entry| ListedModel {
            id: entry.id,
            owned_by: entry.owned_by,
            display_name: entry.display_name,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openai_and_anthropic_lists_read_alike() {
        let openai =
            br#"{"object":"list","data":[{"id":"gpt-x","object":"model","owned_by":"openai"}]}"#;
        assert_eq!(
            parse(openai).unwrap(),
            [ListedModel {
                id: "gpt-x".into(),
                owned_by: Some("openai".into()),
                display_name: None
            }]
        );
        let anthropic = br#"{"data":[{"type":"model","id":"claude-y","display_name":"Claude Y"}],"has_more":false}"#;
        assert_eq!(
            parse(anthropic).unwrap()[0].display_name.as_deref(),
            Some("Claude Y")
        );
    }

    #[test]
    fn an_answer_that_is_no_list_is_an_error_naming_it() {
        for body in [
            &b"<html>"[..],
            br#"{"data":"x"}"#,
            br#"{"models":[]}"#,
            br#"{"data":[{"name":1}]}"#,
        ] {
            let err = parse(body).unwrap_err();
            assert!(
                err.starts_with("the answer is not a list of models"),
                "{err}"
            );
        }
    }
}
