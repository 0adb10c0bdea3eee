//! Opening conversations: what a new conversation's context holds (seed 003).

use coder_protocol::Role;

use super::*;
use crate::config::{Config, ProviderConfig, ProviderKind};

/// A session with no MCP server and no saving, in `workspace`.
fn session(workspace: &std::path::Path) -> Arc<Session> {
    let provider = ProviderConfig {
        kind: ProviderKind::OpenAi,
        base_url: "http://127.0.0.1:9/v1".to_owned(),
        api_key: None,
    };
    let mut config = Config::new(workspace, provider, "m");
    config.save_sessions = false;
    Session::new(config, Vec::new()).unwrap()
}

#[tokio::test]
async fn a_conversation_opens_with_its_mcp_view_built_and_its_user_instructions_held() {
    let workspace = tempfile::tempdir().unwrap();
    let session = session(workspace.path());
    let view_is_built = |id| {
        let conversation = session.conversation(id).unwrap();
        let conversation = lock(&conversation);
        conversation
            .context
            .mcp_view
            .is_current(&session.services.mcp)
    };
    assert!(view_is_built(session.root()));
    let spec = ConversationSpec {
        user_instructions: Some("Answer in French.".to_owned()),
        ..ConversationSpec::default()
    };
    let id = session.open_conversation(spec, Opener::Engine).unwrap();
    assert!(
        view_is_built(id),
        "built when it opens, not at its first task"
    );
    let conversation = session.conversation(id).unwrap();
    let conversation = lock(&conversation);
    assert_eq!(
        conversation.context.user_instructions.as_deref(),
        Some("Answer in French.")
    );
    assert_eq!(conversation.history.len(), 1);
    assert_eq!(conversation.history[0].role, Role::User);
    assert_eq!(
        conversation.history[0].content.as_deref(),
        Some("Answer in French.")
    );
}
