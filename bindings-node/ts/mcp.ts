// `coder-agent-engine/mcp`: SemaCore 2's MCP types that coder has (`sema-core/mcp`). Servers
// are given in `SemaCoreConfig.mcpServers`; their state comes as `mcp:server:status`.

export type { McpServerOptions as MCPServerConfig } from "./engine";
export type { MCPServerStatusData as MCPServerInfo } from "./event";
