// A one-question chat with coder's engine in-process. Point it at any OpenAI-compatible
// server (or OpenAI itself):
//
//   cd bindings-node && npm run build
//   OPENAI_BASE_URL=http://127.0.0.1:8080/v1 node examples/chat.mjs "What is in this folder?"
//
// Set OPENAI_API_KEY for api.openai.com, CODER_MODEL for the model name.
import { SemaCore } from "coder-agent-engine";

const core = new SemaCore({ workingDir: process.cwd(), logLevel: "warn" });
await core.addModel({
  provider: "openai",
  modelName: process.env.CODER_MODEL ?? "gpt-5",
  baseURL: process.env.OPENAI_BASE_URL ?? "https://api.openai.com/v1",
  apiKey: process.env.OPENAI_API_KEY ?? "",
  maxTokens: 4096,
  contextLength: 128000,
});
core.on("message:text:chunk", ({ delta }) => process.stdout.write(delta));
core.on("tool:execution:complete", ({ toolName, summary }) => console.error(`\n• ${toolName}: ${summary}`));
core.on("tool:permission:request", ({ toolName }) => core.respondToToolPermission({ toolName, selected: "refuse" }));
core.on("session:error", ({ error }) => console.error(`error: ${error.message}`));
core.on("state:update", async ({ state }) => {
  if (state === "idle") {
    process.stdout.write("\n");
    await core.dispose();
  }
});
core.once("session:ready", () => core.processUserInput(process.argv[2] ?? "Say hello."));
await core.createSession();
