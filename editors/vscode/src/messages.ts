// The messages between the extension host and the chat view's webview. Every protocol shape
// in them is the generated one (bindings-node/ts/protocol.ts): the view calls `coder lsp`'s
// methods by their names with their own params, and receives the engine's events unchanged,
// so a change of the protocol fails the build here instead of drifting.

import type { ClientRequests, ConversationId, Event, HistoryEntry, PermissionDecision } from "../../../bindings-node/ts/protocol";

export type Method = keyof ClientRequests;

/** One request of `coder lsp`'s method table, made by the view through the host. */
export type ViewRequest = {
  [M in Method]: { type: "request"; id: number; method: M; params: ClientRequests[M]["params"] };
}[Method];

/** What the view sends to the host. */
export type ViewMessage =
  /** The page is loaded and listening: the host answers with `hello`. */
  | { type: "ready" }
  | ViewRequest
  /** A person's answer to the permission request `requestId` (shown from its event). */
  | { type: "answer"; requestId: string; decision: PermissionDecision }
  /** Put text on the clipboard (a code block's copy button). */
  | { type: "copy"; text: string }
  /** Open a file in the editor, at a line (1-based) when given. */
  | { type: "open"; path: string; line?: number }
  /** Put the editor's selection, with its file and lines, into the input box (`prefill`). */
  | { type: "attachSelection" };

/** What the host sends to the view. */
export type HostMessage =
  /** The session the view shows: its root conversation and workspace folder. `epoch` counts
   * the server's starts: a new one means its events start over (the server died and was
   * started again on the same session). `earlier`: the root's messages that a resumed
   * session brought back, which no event of this server carries. */
  | {
      type: "hello";
      root: ConversationId;
      sessionId: string;
      workspace: string;
      epoch: number;
      /** Counts the times the conversation was replaced under the same server (a session
       * resumed or forked, a rewind): the view shows `earlier` in place of what it had. */
      generation: number;
      earlier: HistoryEntry[];
    }
  /** One engine event, as `conversation/event` carried it. */
  | { type: "event"; event: Event }
  /** The answer to the view's request `id`: its result, or the error `coder lsp` gave. */
  | { type: "response"; id: number; result?: unknown; error?: { message: string; code?: number } }
  /** coder could not be started, or the session not read: what to do, for people. */
  | { type: "problem"; message: string }
  /** Text the host wants in the input box (a selection attached, a code action's question). */
  | { type: "prefill"; text: string };

/** The result type of a method, for the view's typed calls. */
export type ResultOf<M extends Method> = ClientRequests[M]["result"];
export type ParamsOf<M extends Method> = ClientRequests[M]["params"];
