// Electron's main process: the engine runs here (`host.js`), the window shows the chat
// (`renderer/`) and reaches the engine only through the preload bridge (`preload.js`).
//
//   CODER_PROVIDER=openai CODER_MODEL=gpt-5 OPENAI_API_KEY=... npx electron . [workspace]
"use strict";

const path = require("node:path");
const { app, BrowserWindow, dialog, ipcMain, shell } = require("electron");
const { ChatHost, EVENT_CHANNEL } = require("./host");

/** The model from the environment; none, and the person's coder configuration decides. */
function modelFromEnvironment() {
  const model = process.env.CODER_MODEL;
  if (!model) return undefined;
  return {
    provider: process.env.CODER_PROVIDER ?? "openai",
    model,
    baseUrl: process.env.CODER_BASE_URL,
    apiKey: process.env.CODER_API_KEY ?? process.env.OPENAI_API_KEY,
  };
}

async function start() {
  const workingDir = path.resolve(process.argv.slice(app.isPackaged ? 1 : 2)[0] ?? process.cwd());
  const window = new BrowserWindow({
    width: 960,
    height: 760,
    title: `coder · ${workingDir}`,
    webPreferences: {
      preload: path.join(__dirname, "preload.js"),
      contextIsolation: true,
      nodeIntegration: false,
      sandbox: true,
    },
  });
  // Links in answers open in the browser, never in this window.
  window.webContents.setWindowOpenHandler(({ url }) => {
    if (/^https?:\/\//.test(url)) void shell.openExternal(url);
    return { action: "deny" };
  });
  window.webContents.on("will-navigate", (event, url) => {
    event.preventDefault();
    if (/^https?:\/\//.test(url)) void shell.openExternal(url);
  });

  let host;
  try {
    host = new ChatHost({ workingDir, model: modelFromEnvironment() }, (event) => {
      if (!window.isDestroyed()) window.webContents.send(EVENT_CHANNEL, event);
    });
  } catch (error) {
    dialog.showErrorBox("coder could not start", String(error?.message ?? error));
    app.quit();
    return;
  }
  for (const [channel, handler] of Object.entries(host.handlers())) {
    ipcMain.handle(channel, (_event, ...args) => handler(...args));
  }
  app.on("window-all-closed", async () => {
    await host.dispose();
    app.quit();
  });
  await window.loadFile(path.join(__dirname, "renderer", "index.html"));
}

app.whenReady().then(start);
