// The ES module entry of `coder-agent-engine/types`: the CommonJS build's values.
import sdk from "../dist/cjs/types.js";

export default sdk;
export const { MAIN_AGENT_ID } = sdk;
