import type { AgentErrorCode } from "./wire.ts";

/** What happened, with ids and outcomes; never a token or a secret. */
export type AgentEvent =
  | {
      readonly type: "grant.created";
      readonly grantId: string;
      readonly principalId: string;
      readonly approvedBy: string;
      readonly capabilities: readonly string[];
      readonly expiresAt: number;
    }
  | {
      readonly type: "grant.revoked";
      readonly grantId: string;
      readonly principalId: string;
      /** The capabilities revoked; all of them when the whole grant was. */
      readonly capabilities: readonly string[];
      readonly whole: boolean;
    }
  | {
      readonly type: "token.issued";
      readonly grantId: string;
      readonly principalId: string;
      readonly tokenId: string;
      readonly capabilities: readonly string[];
      readonly audience: string;
      readonly via: "device_code" | "client_credentials" | "authorization_code" | "refresh_token";
    }
  | {
      readonly type: "capability.executed";
      readonly grantId: string;
      readonly principalId: string;
      readonly capability: string;
      readonly tokenId: string;
      readonly outcome: "ok" | "error";
      readonly durationMs: number;
      /** `"mcp"` for a `tools/call` at the MCP endpoint; absent at the execute URL. */
      readonly via?: "mcp";
    }
  | {
      readonly type: "execute.denied";
      readonly error: AgentErrorCode;
      readonly principalId?: string;
      readonly grantId?: string;
      readonly capability?: string;
      /** The capability location the token was presented at; absent at the execute URL. */
      readonly location?: string;
      /** `"mcp"` at the MCP endpoint. */
      readonly via?: "mcp";
    };

export type AgentEventListener = (event: AgentEvent) => void;
