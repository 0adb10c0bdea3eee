// The ES module entry: the same classes as the CommonJS build (one copy of the state, so
// `import` and `require` in one process share it).
import sdk from "../dist/cjs/index.js";

export const { CoderEngine, SemaCore, SemaSession, MAIN_AGENT_ID, Engine } = sdk;
export default sdk;
