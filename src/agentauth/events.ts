import type { AgentErrorCode } from "./wire.ts";

/** What happened, with ids and outcomes; never a token or a secret. */
export type AgentEvent =
  | {
      /** A human approved an agent they had no active grant for. */
      readonly type: "grant.created";
      readonly grantId: string;
      readonly principalId: string;
      readonly approvedBy: string;
      readonly capabilities: readonly string[];
      readonly expiresAt: number;
    }
  | {
      /** A human approved again an agent whose active grant they had: that grant took it. */
      readonly type: "grant.extended";
      readonly grantId: string;
      readonly principalId: string;
      readonly approvedBy: string;
      /** The capabilities this approval added; none when it only extended the grant. */
      readonly added: readonly string[];
      /** Every capability the grant holds now. */
      readonly capabilities: readonly string[];
      readonly expiresAt: number;
      /** Present when this approval bound the grant to a DPoP key. */
      readonly bound?: true;
    }
  | {
      /** An approval that made or changed nothing: the human or the agent holds as many grants as allowed, or the grant is bound to another key. */
      readonly type: "grant.refused";
      readonly principalId: string;
      readonly approvedBy: string;
      readonly reason: "bound_to_another_key" | "approver_limit" | "principal_limit";
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
