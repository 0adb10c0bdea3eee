// The chat view's page. The extension fills it with its webview's URIs; the browser tests
// with their own server's. Scripts run only with the page's nonce, and nothing is loaded
// from anywhere but the extension's own files (`cspSource`).

export interface PageParts {
  /** The bundled front end (dist/webview.js). */
  script: string;
  /** Its stylesheet (dist/webview.css). */
  style: string;
  /** The webview's `cspSource` (the origin its resources come from). */
  cspSource: string;
  /** A fresh random string for this page. */
  nonce: string;
}

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

export function chatPage(parts: PageParts): string {
  const csp = [
    "default-src 'none'",
    `img-src ${parts.cspSource} data: blob:`,
    `style-src ${parts.cspSource}`,
    `font-src ${parts.cspSource}`,
    `script-src 'nonce-${parts.nonce}'`,
  ].join("; ");
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <meta http-equiv="Content-Security-Policy" content="${escape(csp)}" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <title>coder</title>
    <link rel="stylesheet" href="${escape(parts.style)}" />
  </head>
  <body>
    <header>
      <select id="sessions" aria-label="Saved sessions: choose one to resume it">
        <option value="">Sessions…</option>
      </select>
      <button id="new" type="button" class="secondary" title="A new conversation, as /new starts">New conversation</button>
      <label class="picker">Mode
        <select id="mode" aria-label="Mode">
          <option value="plan">plan</option>
          <option value="default" selected>default</option>
          <option value="auto-edit">auto-edit</option>
          <option value="yolo">yolo</option>
        </select>
      </label>
      <span class="picker" title="The permission preset (/permissions changes it)">Preset
        <output id="preset" aria-label="Permission preset">…</output>
      </span>
      <label class="picker">Model
        <input id="model" size="14" aria-label="Model (Enter switches)" placeholder="model" />
      </label>
      <div id="gauge" role="meter" aria-label="Context used" aria-valuemin="0" aria-valuemax="100" aria-valuenow="0" title="Context used">
        <div class="fill"></div><span class="label">context</span>
      </div>
    </header>
    <main id="log" role="log" aria-live="polite" aria-label="Conversation" tabindex="0"></main>
    <footer>
      <div id="status" role="status" aria-live="polite"></div>
      <form id="composer" aria-label="Message coder">
        <ul id="completions" role="listbox" aria-label="Completions" hidden></ul>
        <div id="attachments" aria-label="Images to send" hidden></div>
        <textarea id="input" rows="3" aria-label="Message" role="combobox" aria-autocomplete="list"
          aria-expanded="false" aria-controls="completions"
          placeholder="Ask coder… (/ for commands, @ for files; Enter sends, Shift+Enter a new line, Esc stops)"></textarea>
        <div class="actions">
          <button id="attach" type="button" class="secondary" title="Attach the editor's selection with its file and lines">Attach selection</button>
          <span class="spacer"></span>
          <select id="busy-send" aria-label="While coder works, a message">
            <option value="steer">steers the running task</option>
            <option value="queue">waits for its turn</option>
          </select>
          <button id="send" type="submit">Send</button>
          <button id="stop" type="button" hidden>Stop</button>
        </div>
      </form>
    </footer>
    <script nonce="${escape(parts.nonce)}" src="${escape(parts.script)}"></script>
  </body>
</html>
`;
}
