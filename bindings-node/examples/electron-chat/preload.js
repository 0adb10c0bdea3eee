// The bridge between the window and the engine: the only thing the page can reach. It runs
// sandboxed with context isolation, so the page gets these functions and nothing of Node or
// Electron; each call is one IPC message that `main.js` gives to the engine's host.
"use strict";

const { contextBridge, ipcRenderer } = require("electron");

const EVENT_CHANNEL = "coder:event";

contextBridge.exposeInMainWorld("coder", {
  info: () => ipcRenderer.invoke("coder:info"),
  send: (text) => ipcRenderer.invoke("coder:send", String(text)),
  stop: () => ipcRenderer.invoke("coder:stop"),
  answer: (requestId, optionId, message) =>
    ipcRenderer.invoke("coder:answer", String(requestId), String(optionId), message ?? ""),
  sessions: () => ipcRenderer.invoke("coder:sessions"),
  resume: (sessionId) => ipcRenderer.invoke("coder:resume", String(sessionId)),
  newSession: () => ipcRenderer.invoke("coder:new"),
  /** Calls `listener` with each engine event; returns a function that stops it. */
  onEvent: (listener) => {
    const forward = (_event, payload) => listener(payload);
    ipcRenderer.on(EVENT_CHANNEL, forward);
    return () => ipcRenderer.removeListener(EVENT_CHANNEL, forward);
  },
});
