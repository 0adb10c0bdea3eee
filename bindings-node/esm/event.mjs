// The ES module entry of `coder-agent-engine/event`: the CommonJS build's values.
import sdk from "../dist/cjs/event.js";

export default sdk;
export const { MAIN_AGENT_ID, PROCESS_EVENTS, SESSION_EVENTS } = sdk;
