// The host side of the chat view, without `vscode`: it carries the engine's events to every
// open view, the views' requests to `coder lsp` and their answers to its permission
// requests back. It decides nothing: the engine's events are the state, and a view that
// reloads rebuilds itself from them (`session/subscribe`). The extension wires it to VS
// Code's webviews; the tests wire it to a page in Chromium.

import { METHODS, type ConversationId, type HistoryEntry, type Mode, type PermissionDecision, type PermissionParams } from "../../../bindings-node/ts/protocol";

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
  /** The editor's selection as text for the input box, or nothing when there is none. */
  selection?(): string | undefined;
  /** A permission request arrived: make sure a person sees it (reveal a view). */
  attention?(request: PermissionParams): unknown;
  /** Another way to answer `request` (review mode's diff editor): its answer settles the
   * request unless a view answered first; nothing means no answer from it. */
  review?(request: PermissionParams): Promise<PermissionDecision | undefined> | undefined;
  /** The request `requestId` is settled (answered, withdrawn): close what shows it. */
  settled?(requestId: string): unknown;
  /** The number of requests waiting for a person changed. */
  pendingChanged?(count: number): unknown;
}

export interface SessionInfo {
  sessionId: string;
  workspace: string;
  /** Counts the server's starts. */
  epoch: number;
  /** How many messages the server's session brought back when it started (a resume). */
  historyLoaded: number;
}

/** Answers kept for requests not arrived yet; a view cannot make the host keep more. */
const MAX_EARLY_ANSWERS = 64;

const METHOD_NAMES: ReadonlySet<string> = new Set(METHODS);

/** The answer to a request whose prompt was withdrawn by the engine (it is not read). */
const WITHDRAWN: PermissionDecision = { decision: "deny", message: "the request was withdrawn" };

export class ChatRelay {
  readonly #session: CoderSession;
  #info: SessionInfo;
  readonly #actions: HostActions;
  readonly #views = new Set<ViewPort>();
  /** Permission requests waiting for a view's answer, by request id. */
  readonly #pending = new Map<string, (decision: PermissionDecision) => void>();
  /** Answers that came before their request: the `permission_requested` event a view shows
   * precedes the `permission/request` the answer goes to. */
  readonly #early = new Map<string, PermissionDecision>();
  #root: Promise<ConversationId> | undefined;
  #generation = 0;
  /** What a resumed session brought back, read once per start. */
  #earlier: Promise<HistoryEntry[]> | undefined;

  readonly #mode: (() => Mode | undefined) | undefined;

  /** `mode`: the mode the person's settings ask for, given to the root when it is made. */
  constructor(session: CoderSession, info: SessionInfo, actions: HostActions, mode?: () => Mode | undefined) {
    this.#session = session;
    this.#mode = mode;
    this.#info = info;
    this.#actions = actions;
    session.onEvent((event) => {
      if (event.type === "permission_withdrawn") this.#early.delete(event.requestId);
      this.broadcast({ type: "event", event });
    });
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
      const found = listed.find((conversation) => conversation.isRoot)?.id;
      if (found) return found;
      const mode = this.#mode?.();
      return this.#session.create(mode ? { mode } : {});
    })();
    this.#root.catch(() => (this.#root = undefined));
    return this.#root;
  }

  /** The server was started again (it died, or a person restarted it): requests of the
   * old one are gone, the root is looked up again, and every view starts over from what
   * the engine holds now. */
  async restarted(info: SessionInfo): Promise<void> {
    this.#info = info;
    this.#root = undefined;
    this.#earlier = undefined;
    this.#generation = 0;
    for (const settle of [...this.#pending.values()]) settle(WITHDRAWN);
    try {
      this.broadcast(await this.#hello());
    } catch (err) {
      this.problem((err as Error).message);
    }
  }

  async #hello(): Promise<HostMessage> {
    const root = await this.root();
    const { sessionId, workspace, epoch, historyLoaded } = this.#info;
    this.#earlier ??= historyLoaded > 0 || this.#generation > 0 ? this.#session.history(root) : Promise.resolve([]);
    return { type: "hello", root, sessionId, workspace, epoch, generation: this.#generation, earlier: await this.#earlier };
  }

  /** The conversation was replaced under the same server: every view shows it anew. */
  async #replaced(sessionId: string | undefined): Promise<void> {
    if (sessionId) this.#info = { ...this.#info, sessionId };
    this.#generation += 1;
    this.#root = undefined;
    this.#earlier = undefined;
    try {
      this.broadcast(await this.#hello());
    } catch (err) {
      this.problem((err as Error).message);
    }
  }

  /** Connects a view; returns the function that takes its messages, and one that detaches it. */
  attach(port: ViewPort): { receive(message: ViewMessage): Promise<void>; detach(): void } {
    this.#views.add(port);
    return {
      receive: (message) => this.#receive(port, message),
      detach: () => this.#views.delete(port),
    };
  }

  /** Tells every open view why coder is not there (it could not be started). */
  problem(message: string): void {
    this.broadcast({ type: "problem", message });
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
        this.#actions.settled?.(request.requestId);
        resolve(decision);
      };
      this.#pending.set(request.requestId, settle);
      const early = this.#early.get(request.requestId);
      if (early) {
        this.#early.delete(request.requestId);
        settle(early);
        return;
      }
      this.#actions.pendingChanged?.(this.#pending.size);
      cancelled.onCancellationRequested(() => settle(WITHDRAWN));
      this.#actions.attention?.(request);
      void this.#actions.review?.(request)?.then((decision) => {
        if (decision) settle(decision);
      });
    });
  }

  async #receive(port: ViewPort, message: ViewMessage): Promise<void> {
    switch (message.type) {
      case "ready":
        try {
          port.post(await this.#hello());
        } catch (err) {
          port.post({ type: "problem", message: (err as Error).message });
        }
        return;
      case "request": {
        // A view calls only the protocol's client-to-server methods.
        if (!METHOD_NAMES.has(message.method)) {
          port.post({ type: "response", id: message.id, error: { message: `unknown method ${message.method}` } });
          return;
        }
        try {
          const result = await this.#session.request(message.method, message.params);
          port.post({ type: "response", id: message.id, result });
          // What replaces the conversation the views show.
          if (message.method === "session/resume" || message.method === "session/fork") {
            await this.#replaced((result as { sessionId?: string }).sessionId);
          } else if (message.method === "conversation/rewind" && !message.params.dryRun) {
            await this.#replaced(undefined);
          }
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
      case "answer": {
        const settle = this.#pending.get(message.requestId);
        if (settle) settle(message.decision);
        else if (this.#early.size < MAX_EARLY_ANSWERS) this.#early.set(message.requestId, message.decision);
        return;
      }
      case "copy":
        await this.#actions.copy(message.text);
        return;
      case "open":
        await this.#actions.open(message.path, message.line);
        return;
      case "attachSelection": {
        const text = this.#actions.selection?.();
        port.post(text ? { type: "prefill", text } : { type: "problem", message: "Select some text in an editor first." });
        return;
      }
    }
  }
}
