import { JwtInvalidError } from "../core/errors.ts";
import type { KeySet } from "../jwt/index.ts";
import { jwtSigner, jwtVerifier } from "../jwt/index.ts";

/** The `typ` of review tokens: never taken for a capability token, nor one for it. */
export const APPROVAL_REVIEW_TYPE = "portcullis-approval-review+jwt";

/** What a human was shown: the agent and the capabilities one user code asks for. */
export interface ReviewedRequest {
  /** The signed-in human who was shown it. */
  readonly approver: string;
  readonly userCodeHash: string;
  readonly principalId: string;
  readonly capabilities: readonly string[];
  /** When the user code expires (epoch ms): the review lasts no longer. */
  readonly expiresAt: number;
}

/**
 * Proof that a human was shown what a user code asks for. `describe` issues a
 * review token with the description; the approval form carries it back, and
 * an approval without a token matching the human, the code, the agent and the
 * capabilities is refused. Signed with the capability-token keys, so it holds
 * across every instance sharing them.
 */
export interface ApprovalReviews {
  issue(reviewed: ReviewedRequest): Promise<string>;
  /**
   * What a live review token of this human for this user code shows (the
   * agent and its capabilities); `undefined` for anything else.
   */
  read(
    token: unknown,
    approver: string,
    userCodeHash: string,
  ): Promise<Pick<ReviewedRequest, "principalId" | "capabilities"> | undefined>;
}

export function approvalReviews(options: {
  readonly keys: KeySet;
  readonly issuer: string;
  /** The approval page's URL: the audience of review tokens. */
  readonly audience: string;
  readonly now: () => number;
}): ApprovalReviews {
  const common = { keys: options.keys, typ: APPROVAL_REVIEW_TYPE, issuer: options.issuer };
  const sign = jwtSigner({ ...common, now: options.now });
  const verify = jwtVerifier({ ...common, now: options.now, clockToleranceSeconds: 0 });
  const { audience } = options;
  return Object.freeze({
    async issue(reviewed: ReviewedRequest): Promise<string> {
      const left = Math.ceil((reviewed.expiresAt - options.now()) / 1000);
      const signed = await sign({
        subject: reviewed.approver,
        audience,
        ttlSeconds: Math.max(1, left),
        claims: {
          user_code_hash: reviewed.userCodeHash,
          client_id: reviewed.principalId,
          capabilities: [...reviewed.capabilities],
        },
      });
      return signed.token;
    },
    async read(token: unknown, approver: string, userCodeHash: string) {
      if (typeof token !== "string" || token === "") return undefined;
      try {
        const { claims } = await verify(token, { audience });
        const { client_id, capabilities } = claims;
        if (
          claims.sub !== approver ||
          claims.user_code_hash !== userCodeHash ||
          typeof client_id !== "string" ||
          !Array.isArray(capabilities) ||
          capabilities.some((name) => typeof name !== "string")
        )
          return undefined;
        return { principalId: client_id, capabilities: capabilities as string[] };
      } catch (error) {
        if (error instanceof JwtInvalidError) return undefined;
        throw error;
      }
    },
  });
}
