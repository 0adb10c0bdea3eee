// The engine side of the chat app, free of Electron: one coder engine for the window's
// workspace, its events handed to `emit` as they come, and the calls the window may make.
// `main.js` gives these calls to `ipcMain.handle` and the events to the window; the tests
// call the same handlers from Node.
"use strict";

const { Engine } = require("coder-agent-engine");

/** The channel events reach the window on; calls go on `coder:<name>` (see `handlers`). */
const EVENT_CHANNEL = "coder:event";

/** Most messages a resumed session's transcript gives the window. */
const TRANSCRIPT_MAX = 200;

class ChatHost {
  /**
   * @param {import("coder-agent-engine").EngineOptions} options the engine's options
   *   (`model` left out: the person's coder configuration names it)
   * @param {(event: object) => void} emit receives every engine event, in order
   */
  constructor(options, emit) {
    this.options = options;
    this.emit = emit;
    this.#open();
  }

  #open() {
    this.engine = Engine.create({ ...this.options });
    this.unsubscribe = this.engine.onEvent((event) => this.emit(event));
  }

  async #close() {
    this.unsubscribe?.();
    await this.engine.dispose();
  }

  /** The calls the window may make, by channel name. Each takes and returns plain data. */
  handlers() {
    return {
      "coder:info": () => this.info(),
      "coder:send": (text) => this.send(text),
      "coder:stop": () => this.stop(),
      "coder:answer": (requestId, optionId, message) => this.answer(requestId, optionId, message),
      "coder:sessions": () => this.sessions(),
      "coder:resume": (sessionId) => this.resume(sessionId),
      "coder:new": () => this.newSession(),
    };
  }

  /** Where the chat stands: the session, its workspace and the root conversation. */
  info() {
    return {
      sessionId: this.engine.sessionId,
      conversationId: this.engine.rootConversation,
      workingDir: this.options.workingDir,
    };
  }

  /** Sends a message to the root conversation; it runs now or after the running task. */
  send(text) {
    if (typeof text !== "string" || text.trim() === "") {
      throw new TypeError("a message is a non-empty string");
    }
    return { inputId: this.engine.send(this.engine.rootConversation, text) };
  }

  /** Interrupts what runs: the model's reply, a command, an open permission request. */
  stop() {
    return this.engine.interruptSession();
  }

  /** Answers a permission request with one of the options its event carried. */
  answer(requestId, optionId, message) {
    /** @type {import("coder-agent-engine").PermissionDecision} */
    const decision = { decision: "option", optionId: String(optionId) };
    if (typeof message === "string" && message.trim() !== "") decision.message = message.trim();
    this.engine.respondPermission(String(requestId), decision);
  }

  /** The saved sessions of the workspace, newest first. */
  sessions() {
    return this.engine.savedSessions().map((session) => ({
      sessionId: session.sessionId,
      title: session.title ?? "",
      savedAt: session.savedAt,
      messages: session.messages,
    }));
  }

  /** Takes up a saved session; returns its transcript (people's and the model's words). */
  async resume(sessionId) {
    await this.#close();
    this.#open();
    this.engine.resume(String(sessionId));
    return { ...this.info(), transcript: this.transcript() };
  }

  /** Leaves the session (it stays saved) for a new, empty one. */
  async newSession() {
    await this.#close();
    this.#open();
    return this.info();
  }

  /** The root conversation's messages a person reads: their own and the model's words
   * (the engine's history leaves out what it added for the model alone). */
  transcript() {
    return this.engine
      .history(this.engine.rootConversation, TRANSCRIPT_MAX)
      .filter((entry) => entry.text)
      .map((entry) => ({ role: entry.role, text: entry.text }));
  }

  async dispose() {
    await this.#close();
  }
}

module.exports = { ChatHost, EVENT_CHANNEL };
