// The ES module entry of `coder-agent-engine/mcp`: the CommonJS build's values.
import sdk from "../dist/cjs/mcp.js";

export default sdk;
