// The chat window. It reaches the engine only through `window.coder` (the preload bridge)
// and renders the engine's events as they come: the answer as Markdown (marked, then
// DOMPurify: what the model writes is never trusted as HTML), thinking folded, each tool
// call as a card with its live output, and permission requests with the options the engine
// sent. It never invents an option or decides by a tool's name.
"use strict";

const coder = window.coder;
const log = document.getElementById("log");
const input = document.getElementById("input");
const sendButton = document.getElementById("send");
const stopButton = document.getElementById("stop");
const statusLine = document.getElementById("status");
const sessionList = document.getElementById("sessions");

/** The root conversation: events of others (work handed to another conversation) show as
 * cards, never as the answer. */
let root = "";
/** The answer being written: its element and its text so far. */
let reply = null;
/** Thinking being written. */
let thinking = null;
/** Tool call cards by call id, permission cards by request id. */
const calls = new Map();
const requests = new Map();
let busySince = 0;
let renderQueued = false;

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function scrollDown() {
  log.scrollTop = log.scrollHeight;
}

function markdown(text) {
  return DOMPurify.sanitize(marked.parse(text, { gfm: true }));
}

/** Renders the answer at most once a frame, however fast the deltas come. */
function renderReply() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    if (reply) reply.node.innerHTML = markdown(reply.text);
    scrollDown();
  });
}

function say(role, text) {
  const node = element("div", `message ${role}`);
  if (role === "assistant") node.innerHTML = markdown(text);
  else node.textContent = text;
  log.append(node);
  scrollDown();
  return node;
}

function setBusy(busy) {
  busySince = busy ? Date.now() : 0;
  stopButton.hidden = !busy;
  statusLine.textContent = busy ? "working…" : "";
}

setInterval(() => {
  if (busySince) statusLine.textContent = `working ${Math.round((Date.now() - busySince) / 1000)}s · Esc or Stop to interrupt`;
}, 1000);

function toolCard(event) {
  const card = element("div", "card tool");
  card.append(element("span", "state", "running"), element("div", "title", event.title));
  const output = element("pre", "output");
  output.hidden = true;
  card.append(output);
  log.append(card);
  calls.set(event.callId, { card, output });
  scrollDown();
}

function finishCard(event, state) {
  const call = calls.get(event.callId);
  if (!call) return;
  call.card.querySelector(".state").textContent = `${state} · ${event.durationMs} ms`;
  call.card.append(element("div", "summary", event.summary));
  if (event.diff) call.card.append(element("pre", "diff", event.diff));
  if (state === "failed") call.card.classList.add("error");
}

function permissionCard(event) {
  const card = element("div", "card permission");
  card.append(element("div", "title", event.title), element("div", "reason", event.reason));
  const shown = event.command ?? event.diff ?? event.plan;
  if (shown) card.append(element("pre", "", shown));
  const options = element("div", "options");
  const why = element("input", "why");
  why.placeholder = "Tell the model why (optional)";
  for (const option of event.options) {
    const button = element("button", "", option.label);
    button.type = "button";
    button.title = option.covers ? `Allows ${option.covers}` : option.label;
    button.addEventListener("click", async () => {
      const message = option.takesMessage ? why.value : "";
      settle(event.requestId, `answered: ${option.label}`);
      await coder.answer(event.requestId, option.optionId, message);
    });
    options.append(button);
  }
  if (event.options.some((option) => option.takesMessage)) options.append(why);
  card.append(options);
  log.append(card);
  requests.set(event.requestId, card);
  scrollDown();
}

function settle(requestId, text) {
  const card = requests.get(requestId);
  if (!card) return;
  requests.delete(requestId);
  card.querySelector(".options")?.remove();
  card.append(element("div", "reason", text));
}

function endReply() {
  reply = null;
  thinking = null;
}

function onEvent(event) {
  const own = event.conversationId === root;
  switch (event.type) {
    case "agent_message_delta":
      if (!own) return;
      if (!reply) reply = { node: say("assistant", ""), text: "" };
      reply.text += event.delta;
      renderReply();
      return;
    case "agent_reasoning_delta":
      if (!own) return;
      if (!thinking) {
        const details = element("details", "thinking");
        details.append(element("summary", "", "thinking"));
        const body = element("div");
        details.append(body);
        log.append(details);
        thinking = body;
      }
      thinking.textContent += event.delta;
      return;
    case "reply_complete":
      if (own) endReply();
      return;
    case "tool_call_started":
      toolCard(event);
      return;
    case "tool_call_output_delta": {
      const call = calls.get(event.callId);
      if (call) {
        call.output.hidden = false;
        call.output.textContent += event.delta;
        scrollDown();
      }
      return;
    }
    case "tool_call_completed":
      finishCard(event, "done");
      return;
    case "tool_call_failed":
      finishCard(event, "failed");
      return;
    case "permission_requested":
      permissionCard(event);
      return;
    case "permission_withdrawn":
      settle(event.requestId, `withdrawn: ${event.reason}`);
      return;
    case "state_changed":
      setBusy(event.state !== "idle");
      if (event.state === "idle") void refreshSessions();
      return;
    case "turn_aborted":
      if (own) {
        endReply();
        log.append(element("div", "reason", "interrupted"));
      }
      return;
    case "error":
      log.append(element("div", "error", event.message));
      scrollDown();
      return;
    default:
      return;
  }
}

async function send() {
  const text = input.value.trim();
  if (!text) return;
  input.value = "";
  say("user", text);
  try {
    await coder.send(text);
  } catch (error) {
    log.append(element("div", "error", String(error?.message ?? error)));
  }
}

async function refreshSessions() {
  const sessions = await coder.sessions();
  const chosen = sessionList.value;
  sessionList.replaceChildren(element("option", "", "Sessions…"));
  sessionList.firstChild.value = "";
  for (const session of sessions) {
    const option = element("option", "", `${session.title || "(untitled)"} · ${new Date(session.savedAt).toLocaleString()}`);
    option.value = session.sessionId;
    sessionList.append(option);
  }
  sessionList.value = chosen;
}

function showInfo(info) {
  root = info.conversationId;
  document.getElementById("where").textContent = info.workingDir;
}

function restart(info) {
  log.replaceChildren();
  calls.clear();
  requests.clear();
  endReply();
  setBusy(false);
  showInfo(info);
}

document.getElementById("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  void send();
});
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    void send();
  }
});
document.addEventListener("keydown", (event) => {
  if (event.key === "Escape" && busySince) void coder.stop();
});
stopButton.addEventListener("click", () => void coder.stop());
document.getElementById("new-session").addEventListener("click", async () => {
  restart(await coder.newSession());
});
sessionList.addEventListener("change", async () => {
  if (!sessionList.value) return;
  const resumed = await coder.resume(sessionList.value);
  restart(resumed);
  for (const message of resumed.transcript) say(message.role, message.text);
});

coder.onEvent(onEvent);
coder.info().then(showInfo);
void refreshSessions();
