// The ES module entry: the same objects as the CommonJS build (one copy of the state, so
// `import` and `require` in one process share it). Every value export of `ts/index.ts` is
// named here; test/exports.test.mjs fails when one is missing or extra.
import sdk from "../dist/cjs/index.js";

export const { CoderEngine, SemaCore, SemaSession, MAIN_AGENT_ID, Engine, endsTask, TASK_END_EVENTS } = sdk;
export default sdk;
