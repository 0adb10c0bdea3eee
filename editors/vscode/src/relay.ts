// The host side of the chat view, without `vscode`: it carries the engine's events to every
// open view, the views' requests to `coder lsp` and their answers to its permission
// requests back. It decides nothing: the engine's events are the state, and a view that
// reloads rebuilds itself from them (`session/subscribe`). The extension wires it to VS
// Code's webviews; the tests wire it to a page in Chromium.

import { METHODS, type ConversationId, type PermissionDecision, type PermissionParams } from "../../../bindings-node/ts/protocol";

import type { HostMessage, ViewMessage } from "./messages";
import type { Cancellation, CoderSession } from "./session";

/** One open view: how the host posts to it. */
export interface ViewPort {
  post(message: HostMessage): unknown;
}

/** What only the editor can do for a view. */
export interface HostActions {
  copy(text: string): unknown;
  open(path: string, line?: number): unknown;
  /** A permission request arrived: make sure a person sees it (reveal a view). */
  attention?(request: PermissionParams): unknown;
  /** The number of requests waiting for a person changed. */
  pendingChanged?(count: number): unknown;
}

export interface SessionInfo {
  sessionId: string;
  workspace: string;
}

const METHOD_NAMES: ReadonlySet<string> = new Set(METHODS);

/** The answer to a request whose prompt was withdrawn by the engine (it is not read). */
const WITHDRAWN: PermissionDecision = { decision: "deny", message: "the request was withdrawn" };

export class ChatRelay {
  readonly #session: CoderSession;
  readonly #info: SessionInfo;
  readonly #actions: HostActions;
  readonly #views = new Set<ViewPort>();
  /** Permission requests waiting for a view's answer, by request id. */
  readonly #pending = new Map<string, (decision: PermissionDecision) => void>();
  #root: Promise<ConversationId> | undefined;

  constructor(session: CoderSession, info: SessionInfo, actions: HostActions) {
    this.#session = session;
    this.#info = info;
    this.#actions = actions;
    session.onEvent((event) => this.broadcast({ type: "event", event }));
    session.onPermission((request, cancelled) => this.#ask(request, cancelled));
  }

  /** The number of permission requests waiting for a person. */
  get pending(): number {
    return this.#pending.size;
  }

  /** The session's root conversation: the first one, made when there is none yet. One
   * create however many views ask at once. */
  root(): Promise<ConversationId> {
    this.#root ??= (async () => {
      const listed = await this.#session.list();
      return listed.find((conversation) => conversation.isRoot)?.id ?? (await this.#session.create());
    })();
    this.#root.catch(() => (this.#root = undefined));
    return this.#root;
  }

  /** Forgets the root (after `session/resume` or a restart of the server). */
  resetRoot(): void {
    this.#root = undefined;
  }

  /** Connects a view; returns the function that takes its messages, and one that detaches it. */
  attach(port: ViewPort): { receive(message: ViewMessage): Promise<void>; detach(): void } {
    this.#views.add(port);
    return {
      receive: (message) => this.#receive(port, message),
      detach: () => this.#views.delete(port),
    };
  }

  /** Posts `message` to every open view. */
  broadcast(message: HostMessage): void {
    for (const view of this.#views) {
      try {
        view.post(message);
      } catch {
        // A view being torn down: it rebuilds from the engine when it comes back.
      }
    }
  }

  #ask(request: PermissionParams, cancelled: Cancellation): Promise<PermissionDecision> {
    return new Promise((resolve) => {
      const settle = (decision: PermissionDecision) => {
        if (!this.#pending.delete(request.requestId)) return;
        this.#actions.pendingChanged?.(this.#pending.size);
        resolve(decision);
      };
      this.#pending.set(request.requestId, settle);
      this.#actions.pendingChanged?.(this.#pending.size);
      cancelled.onCancellationRequested(() => settle(WITHDRAWN));
      this.#actions.attention?.(request);
    });
  }

  async #receive(port: ViewPort, message: ViewMessage): Promise<void> {
    switch (message.type) {
      case "ready": {
        const root = await this.root();
        port.post({ type: "hello", root, ...this.#info });
        return;
      }
      case "request": {
        // A view calls only the protocol's client-to-server methods.
        if (!METHOD_NAMES.has(message.method)) {
          port.post({ type: "response", id: message.id, error: { message: `unknown method ${message.method}` } });
          return;
        }
        try {
          const result = await this.#session.request(message.method, message.params);
          port.post({ type: "response", id: message.id, result });
        } catch (err) {
          const failure = err as { message?: unknown; code?: unknown };
          port.post({
            type: "response",
            id: message.id,
            error: {
              message: typeof failure.message === "string" ? failure.message : String(err),
              code: typeof failure.code === "number" ? failure.code : undefined,
            },
          });
        }
        return;
      }
      case "answer":
        this.#pending.get(message.requestId)?.(message.decision);
        return;
      case "copy":
        await this.#actions.copy(message.text);
        return;
      case "open":
        await this.#actions.open(message.path, message.line);
        return;
    }
  }
}
