//! Bad input and faults: each gets the right error, and the server keeps serving.

use std::time::Duration;

use coder_testkit::{MockModelServer, MockResponse};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;

use super::Client;

#[tokio::test]
async fn bad_input_gets_errors_and_the_server_keeps_serving() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    let mut seen = Vec::new();

    let early = client
        .request("conversation/list", json!({}), &mut seen)
        .await;
    assert_eq!(early["error"]["code"], -32002, "{early}");

    let body = "{not json";
    let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
    client.stdin.write_all(frame.as_bytes()).await.unwrap();
    let parse_error = client.read().await;
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    client
        .stdin
        .write_all(b"Content-Type: nothing-else\r\n\r\n")
        .await
        .unwrap();
    let header_error = client.read().await;
    assert_eq!(header_error["error"]["code"], -32700, "{header_error}");

    let init = client
        .request("initialize", json!({"capabilities": {}}), &mut seen)
        .await;
    assert!(init["result"]["capabilities"].is_object());
    client
        .write(json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        .await;
    let unknown = client
        .request("conversation/fly", json!({}), &mut seen)
        .await;
    assert_eq!(unknown["error"]["code"], -32601);
    let invalid = client
        .request("conversation/send", json!({"conversationId": 7}), &mut seen)
        .await;
    assert_eq!(invalid["error"]["code"], -32602);
    let list = client
        .request("conversation/list", json!({}), &mut seen)
        .await;
    assert_eq!(list["result"]["conversations"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_client_that_goes_away_mid_task_ends_the_task_and_the_server() {
    let server =
        MockModelServer::start(vec![MockResponse::text_deltas(500, "slow ").with_delay(20)])
            .await
            .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    let mut seen = Vec::new();
    client.initialize(json!({})).await;
    let root = client.root().await;
    client.send_text(&root, "talk", &mut seen).await;
    while !seen
        .iter()
        .any(|m| m["params"]["event"]["type"] == "agent_message_delta")
    {
        seen.push(client.read().await);
    }
    let Client {
        mut child, stdin, ..
    } = client;
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("coder lsp did not exit after stdin closed")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        server
            .wait_for(Duration::from_secs(5), |r| r[0].client_disconnected)
            .await,
        "the model stream was still being read"
    );
    // The session was saved on the way out, with the interruption recorded.
    let sessions: Vec<_> = std::fs::read_dir(workspace.path().join(".coder/sessions"))
        .expect("no session snapshot was saved")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    assert_eq!(sessions.len(), 1, "{sessions:?}");
    let snapshot: Value =
        serde_json::from_str(&std::fs::read_to_string(&sessions[0]).unwrap()).unwrap();
    let messages = snapshot["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(
        roles,
        ["system", "user", "user", "assistant", "user"],
        "{snapshot}"
    );
    assert_eq!(messages[1]["content"], "talk");
    assert!(
        messages[2]["content"]
            .as_str()
            .unwrap()
            .starts_with("<system-reminder>"),
        "the first input's reminders: {}",
        messages[2]
    );
    assert!(
        messages[3]["content"]
            .as_str()
            .unwrap()
            .starts_with("slow "),
        "the partial reply is kept: {}",
        messages[3]
    );
    assert_eq!(messages[4]["content"], "[Request interrupted by user]");
    assert_eq!(snapshot["conversationId"], root);
}

#[tokio::test]
async fn a_wrong_content_length_costs_one_error_and_the_next_frame_is_read() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    client.initialize(json!({})).await;
    // The header claims 10 bytes fewer than the body has.
    let body = json!({"jsonrpc": "2.0", "id": 50, "method": "conversation/list", "params": {}})
        .to_string();
    let short = format!("Content-Length: {}\r\n\r\n{body}", body.len() - 10);
    client.write_raw(short.as_bytes()).await;
    let parse_error = client.read().await;
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    assert_eq!(parse_error["id"], serde_json::Value::Null);
    let mut seen = Vec::new();
    let list = client
        .request("conversation/list", json!({}), &mut seen)
        .await;
    assert_eq!(
        list["result"]["conversations"].as_array().unwrap().len(),
        1,
        "{list}"
    );
    client.stop().await;
}

#[tokio::test]
async fn methods_without_params_and_unknown_conversations_get_clear_answers() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    client.initialize(json!({})).await;
    let mut seen = Vec::new();
    client
        .write(json!({"jsonrpc": "2.0", "id": 90, "method": "conversation/list"}))
        .await;
    let list = client.response(90, &mut seen).await;
    assert_eq!(
        list["result"]["conversations"].as_array().unwrap().len(),
        1,
        "{list}"
    );
    client
        .write(json!({"jsonrpc": "2.0", "id": 91, "method": "conversation/send"}))
        .await;
    let missing = client.response(91, &mut seen).await;
    assert_eq!(missing["error"]["code"], -32602, "{missing}");
    assert!(
        missing["error"]["message"]
            .as_str()
            .unwrap()
            .contains("conversationId"),
        "{missing}"
    );
    let nobody = json!({"conversationId": "00000000-0000-0000-0000-000000000000"});
    for method in ["conversation/history", "conversation/interrupt"] {
        let answer = client.request(method, nobody.clone(), &mut seen).await;
        assert_eq!(answer["error"]["code"], -32602, "{method}: {answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .contains("00000000"),
            "{method}: {answer}"
        );
    }
    let destroy = client
        .request("conversation/destroy", nobody, &mut seen)
        .await;
    assert_eq!(destroy["result"]["ok"], false, "{destroy}");
    let root = client.root().await;
    let empty = client
        .request(
            "conversation/send",
            json!({"conversationId": root}),
            &mut seen,
        )
        .await;
    assert_eq!(empty["error"]["code"], -32602, "{empty}");
    assert_eq!(empty["error"]["data"]["kind"], "invalid_params", "{empty}");
    // Whitespace only is empty input too: the engine's error, as every door gives it.
    for params in [
        json!({"conversationId": root, "text": " \n\t "}),
        json!({"conversationId": root, "items": [{"type": "text", "text": "  "}]}),
    ] {
        let blank = client.request("conversation/send", params, &mut seen).await;
        assert_eq!(blank["error"]["code"], -32602, "{blank}");
        assert_eq!(blank["error"]["data"]["kind"], "invalid_params", "{blank}");
        assert_eq!(
            blank["error"]["message"],
            "the input is empty: give some text (not only whitespace), an image, or both"
        );
    }
    client.stop().await;
}

#[tokio::test]
async fn a_panic_inside_a_request_fails_only_that_request() {
    let server = MockModelServer::start(vec![MockResponse::text("still here")])
        .await
        .unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start_with(
        workspace.path(),
        &server,
        "balanced",
        &[("CODER_LSP_TEST_HOOKS", "1")],
    );
    client.initialize(json!({})).await;
    let mut seen = Vec::new();
    let panicked = client
        .request("coder/test/panic", json!({}), &mut seen)
        .await;
    assert_eq!(panicked["error"]["code"], -32603, "{panicked}");
    assert!(
        panicked["error"]["message"]
            .as_str()
            .unwrap()
            .contains("deliberate"),
        "{panicked}"
    );
    let root = client.root().await;
    client.send_text(&root, "hi", &mut seen).await;
    client.until_events("task_complete", 1, &mut seen).await;
    client.stop().await;
}

#[tokio::test]
async fn cancel_request_for_a_finished_or_unknown_request_changes_nothing() {
    let server = MockModelServer::start(Vec::new()).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let (mut client, root) = Client::ready(workspace.path(), &server, "balanced").await;
    // `$/cancelRequest` is a notification: no answer, and the next request is served.
    for id in [json!(1), json!(9999), json!("not-a-request")] {
        client
            .write(json!({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": id}}))
            .await;
    }
    let mut seen = Vec::new();
    let history = client
        .request(
            "conversation/history",
            json!({"conversationId": root}),
            &mut seen,
        )
        .await;
    assert_eq!(history["result"]["entries"], json!([]));
    assert!(
        seen.is_empty(),
        "nothing answered the notifications: {seen:?}"
    );
    client.stop().await;
}

/// Every kind of well-framed body that is not a JSON-RPC 2.0 message, with the answer's code
/// and id; after each, a valid request is answered.
#[tokio::test]
async fn invalid_json_rpc_gets_an_error_and_the_connection_goes_on() {
    let server = MockModelServer::start(vec![]).await.unwrap();
    let workspace = tempfile::tempdir().unwrap();
    let mut client = Client::start(workspace.path(), &server, "balanced");
    client.initialize(json!({})).await;
    let cases: Vec<(&[u8], i64, Value)> = vec![
        (
            br#"{"id": 1, "method": "conversation/list"}"#,
            -32600,
            json!(1),
        ),
        (
            br#"{"jsonrpc": null, "id": 2, "method": "conversation/list"}"#,
            -32600,
            json!(2),
        ),
        (
            br#"{"jsonrpc": "1.0", "id": "three", "method": "conversation/list"}"#,
            -32600,
            json!("three"),
        ),
        (
            br#"{"jsonrpc": "2.0", "id": 4, "method": 17}"#,
            -32600,
            json!(4),
        ),
        (
            br#"{"jsonrpc": "2.0", "id": {"a": 1}, "method": "conversation/list"}"#,
            -32600,
            Value::Null,
        ),
        (
            br#"{"jsonrpc": "2.0", "id": [5], "method": "conversation/list"}"#,
            -32600,
            Value::Null,
        ),
        (
            br#"{"jsonrpc": "2.0", "id": 6.5, "method": "conversation/list"}"#,
            -32600,
            Value::Null,
        ),
        (
            br#"{"jsonrpc": "2.0", "id": false, "method": "conversation/list"}"#,
            -32600,
            Value::Null,
        ),
        (
            br#"{"jsonrpc": "2.0", "id": 99999999999999999999, "method": "conversation/list"}"#,
            -32600,
            Value::Null,
        ),
        (
            br#"[{"jsonrpc": "2.0", "id": 7, "method": "conversation/list"}]"#,
            -32600,
            Value::Null,
        ),
        (b"[]", -32600, Value::Null),
        (b"42", -32600, Value::Null),
        (br#""a string""#, -32600, Value::Null),
        (b"null", -32600, Value::Null),
        (b"{}", -32600, Value::Null),
        (
            br#"{"jsonrpc": "2.0", "id": 8, "result": {}, "error": {"code": 1, "message": "m"}}"#,
            -32600,
            json!(8),
        ),
        (br#"{"jsonrpc": "2.0", "id": 9}"#, -32600, json!(9)),
        (
            br#"{"jsonrpc": "2.0", "id": 10, "method": "conversation/list", "result": 1}"#,
            -32600,
            json!(10),
        ),
        (
            br#"{"jsonrpc": "2.0", "id": 11, "method": "conversation/list", "params": [1]}"#,
            -32602,
            json!(11),
        ),
        (
            br#"{"jsonrpc": "2.0", "id": 12, "method": "conversation/send", "params": 12}"#,
            -32602,
            json!(12),
        ),
        (
            br#"{"jsonrpc": "2.0", "id": 13, "method": "initialize", "params": "x"}"#,
            -32602,
            json!(13),
        ),
        (
            br#"{"jsonrpc": "2.0", "id": 14, "method": "shutdown", "params": true}"#,
            -32602,
            json!(14),
        ),
        (
            b"{\"jsonrpc\": \"2.0\", \"id\": 15, \"method\": \"conversation/\xff\xfe\"}",
            -32700,
            Value::Null,
        ),
        (b"", -32700, Value::Null),
    ];
    let mut seen = Vec::new();
    for (index, (body, code, id)) in cases.into_iter().enumerate() {
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.extend_from_slice(body);
        client.write_raw(&frame).await;
        let answer = client.read().await;
        let shown = String::from_utf8_lossy(body);
        assert_eq!(answer["error"]["code"], code, "{shown}: {answer}");
        assert_eq!(answer["id"], id, "{shown}: {answer}");
        let next = 1000 + index as i64;
        client
            .write(json!({"jsonrpc": "2.0", "id": next, "method": "conversation/list"}))
            .await;
        let list = client.response(next, &mut seen).await;
        assert_eq!(
            list["result"]["conversations"].as_array().map(Vec::len),
            Some(1),
            "after {shown}: {list}"
        );
    }
    // A notification with params that are not an object cannot be answered: it is dropped,
    // and nothing but the next request's answer comes back.
    client
        .write(json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": [1, 2]}))
        .await;
    // Bad headers: invalid UTF-8, an endless line, no Content-Length.
    client.write_raw(b"Content-Length: \xff\xfe\r\n\r\n").await;
    let answer = client.read().await;
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    client.write_raw(&vec![b'x'; 100_000]).await;
    client.write_raw(b"\r\n\r\n").await;
    let mut garbage_answers = 0;
    client
        .write(json!({"jsonrpc": "2.0", "id": 2000, "method": "conversation/list"}))
        .await;
    loop {
        let message = client.read().await;
        if message["id"] == 2000 {
            assert_eq!(
                message["result"]["conversations"].as_array().map(Vec::len),
                Some(1)
            );
            break;
        }
        assert_eq!(message["error"]["code"], -32700, "{message}");
        garbage_answers += 1;
    }
    assert!(garbage_answers >= 1);
    assert!(seen.is_empty(), "nothing else was answered: {seen:?}");
    client.stop().await;
}
