// The coder protocol (docs/protocol.md) over a JSON-RPC connection, typed with the method
// maps and types generated from the Rust method table. The extension and the tests run it
// over vscode-jsonrpc's MessageConnection (the extension's survives a restart of the
// server: src/server.ts). Nothing here touches `vscode`.

import {
  CONVERSATION_CREATE,
  CONVERSATION_DESTROY,
  CONVERSATION_EVENT,
  CONVERSATION_HISTORY,
  CONVERSATION_INTERRUPT,
  CONVERSATION_LIST,
  CONVERSATION_SEND,
  PERMISSION_REQUEST,
  TASK_END_EVENTS,
  type ClientRequests,
  type ConversationId,
  type ConversationSummary,
  type CreateParams,
  type DestroyResult,
  type Event,
  type HistoryEntry,
  type InputItem,
  type PermissionDecision,
  type PermissionParams,
  type ServerNotifications,
  type SendResult,
  type ServerRequests,
} from "../../../bindings-node/ts/protocol";

export type { Event, PermissionDecision, PermissionParams };

/** What vscode-jsonrpc's MessageConnection (and VS Code's LanguageClient) offer. */
export interface Connection {
  sendRequest<R>(method: string, params?: unknown): Promise<R>;
  onNotification(method: string, handler: (params: any) => void): unknown;
  onRequest(method: string, handler: (params: any, token: Cancellation) => unknown): unknown;
}

/** What vscode-jsonrpc's and VS Code's `CancellationToken` both are: set when the server
 * sends `$/cancelRequest` for a request (a withdrawn permission request). */
export interface Cancellation {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => void): unknown;
}

export type EventListener = (event: Event) => void;
/** Answers a permission request. `cancelled` is set when the engine withdraws it (a mode or
 * preset change decided the call again, or the task was interrupted): close the prompt; the
 * answer is no longer read. */
export type PermissionHandler = (
  request: PermissionParams,
  cancelled: Cancellation,
) => PermissionDecision | Promise<PermissionDecision>;

/** The answer when no handler is set: the tool does not run. */
const NO_HANDLER: PermissionDecision = { decision: "deny", message: "no one is there to approve it" };

export class CoderSession {
  readonly #connection: Connection;
  readonly #listeners = new Set<EventListener>();
  #permissions: PermissionHandler | undefined;

  /** Hooks into `connection`; call before the connection starts listening. */
  constructor(connection: Connection) {
    this.#connection = connection;
    const onEvent = ({ event }: ServerNotifications[typeof CONVERSATION_EVENT]["params"]) => {
      for (const listener of this.#listeners) listener(event);
    };
    type Ask = ServerRequests[typeof PERMISSION_REQUEST];
    const onAsk = async (request: Ask["params"], cancelled: Cancellation): Promise<Ask["result"]> => {
      try {
        return (await this.#permissions?.(request, cancelled)) ?? NO_HANDLER;
      } catch (err) {
        return { decision: "deny", message: `the editor failed to ask: ${String(err)}` };
      }
    };
    connection.onNotification(CONVERSATION_EVENT, onEvent);
    connection.onRequest(PERMISSION_REQUEST, onAsk);
  }

  /** A request of the protocol's method table, its params and result typed by it. */
  request<M extends keyof ClientRequests>(
    method: M,
    params: ClientRequests[M]["params"],
  ): Promise<ClientRequests[M]["result"]> {
    return this.#connection.sendRequest<ClientRequests[M]["result"]>(method, params);
  }

  /** Every engine event, in `seq` order; returns a function that stops listening. */
  onEvent(listener: EventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Who answers `permission/request` (otherwise the tool is denied). */
  onPermission(handler: PermissionHandler): void {
    this.#permissions = handler;
  }

  async create(params: CreateParams = {}): Promise<ConversationId> {
    const result = await this.request(CONVERSATION_CREATE, params);
    return result.conversationId;
  }

  /** Takes a person's input and resolves at once: with the task it started (progress
   * arrives as events), or, for a built-in command (`/help`, `/mode plan`), with its
   * answer in `text` and no task. */
  async send(conversationId: ConversationId, input: string | InputItem[]): Promise<SendResult> {
    const params = typeof input === "string" ? { conversationId, text: input } : { conversationId, items: input };
    return await this.request(CONVERSATION_SEND, params);
  }

  /** Sends `input` and resolves with the last message of its work when it completes;
   * rejects when it is interrupted or dropped. A task that hands over to another
   * conversation names its continuation, which is followed to the end. */
  async ask(conversationId: ConversationId, input: string | InputItem[]): Promise<string | null> {
    // A task's events may arrive before `conversation/send` answers: keep the ends seen.
    const ends = new Map<string, Event>();
    let wanted: string | undefined;
    let finish: (event: Event) => void = () => {};
    const finished = new Promise<Event>((resolve) => (finish = resolve));
    const follow = () => {
      for (let end = wanted && ends.get(wanted); end; end = wanted && ends.get(wanted)) {
        if (end.type === "turn_aborted" && end.reason === "replaced" && end.continuation) {
          wanted = end.continuation;
        } else {
          finish(end);
          return;
        }
      }
    };
    const stop = this.onEvent((event) => {
      if (!event.taskId || !(TASK_END_EVENTS as readonly string[]).includes(event.type)) return;
      ends.set(event.taskId, event);
      follow();
    });
    try {
      const started = await this.send(conversationId, input);
      // A built-in command that answered at once: its answer is the result.
      if (!started.taskId) return started.text ?? null;
      wanted = started.taskId;
      follow();
      const end = await finished;
      if (end.type === "turn_aborted") throw new Error(`the task was aborted: ${end.reason}`);
      if (end.type === "task_dropped") throw new Error(`the task was dropped: ${end.reason}`);
      return end.type === "task_complete" ? (end.lastAgentMessage ?? null) : null;
    } finally {
      stop();
    }
  }

  async list(): Promise<ConversationSummary[]> {
    return (await this.request(CONVERSATION_LIST, {})).conversations;
  }

  async history(conversationId: ConversationId, limit?: number): Promise<HistoryEntry[]> {
    const result = await this.request(CONVERSATION_HISTORY, { conversationId, limit });
    return result.entries;
  }

  async destroy(conversationId: ConversationId): Promise<DestroyResult> {
    return this.request(CONVERSATION_DESTROY, { conversationId });
  }

  async interrupt(conversationId: ConversationId): Promise<void> {
    await this.request(CONVERSATION_INTERRUPT, { conversationId });
  }
}
