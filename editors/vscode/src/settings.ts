// The person's settings as `coder lsp` takes them (`initializationOptions`): the model from
// VS Code's settings, the API key from VS Code's SecretStorage (never from settings, which
// may be synced or committed), and VS Code's workspace trust as coder's.

import * as vscode from "vscode";

import type { InitializationOptions, Mode } from "../../../bindings-node/ts/protocol";

/** Where the API key is kept in SecretStorage. */
export const API_KEY_SECRET = "coder.apiKey";

const MODES: readonly Mode[] = ["plan", "default", "auto-edit", "yolo"];

export async function initializationOptions(secrets: vscode.SecretStorage): Promise<Omit<InitializationOptions, "sessionId">> {
  const config = vscode.workspace.getConfiguration("coder");
  const options: Omit<InitializationOptions, "sessionId"> = {
    // An untrusted VS Code workspace is untrusted for coder too: its own configuration
    // may only narrow what the person's allows.
    trustWorkspace: vscode.workspace.isTrusted,
  };
  const provider = config.get<string>("provider");
  if (provider) options.provider = provider;
  const model = config.get<string>("model");
  if (model) options.model = model;
  const baseUrl = config.get<string>("baseUrl");
  if (baseUrl) options.baseUrl = baseUrl;
  const apiKey = await secrets.get(API_KEY_SECRET);
  if (apiKey) options.apiKey = apiKey;
  return options;
}

/** The mode the settings ask for the conversation to start in, if any. */
export function configuredMode(): Mode | undefined {
  const mode = vscode.workspace.getConfiguration("coder").get<string>("mode");
  return MODES.find((known) => known === mode);
}
