// What the tests drive outside VS Code: the protocol client, the relay the chat view talks
// through, and the view's page (bundled to dist/host.mjs).

export { ChatRelay } from "./relay";
export { chatPage } from "./page";
export { CoderSession } from "./session";
export { findServer } from "./discovery";
